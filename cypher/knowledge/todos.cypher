// For sessions whose todo lists ever named a file: their latest todo list.
UNWIND $files AS path
MATCH (o:Operation {project: $project, type: 'todo'})
USING INDEX o:Operation(project, type)
WHERE o.todos CONTAINS path
WITH DISTINCT path, o.session_id AS sid
MATCH (latest:Operation {session_id: sid, type: 'todo'})
USING INDEX latest:Operation(session_id, seq)
WHERE latest.seq >= 0
WITH path, sid, latest
ORDER BY latest.seq DESC
WITH path, sid, collect(latest)[0] AS l
RETURN path, sid AS session_id, l.todos AS todos, l.at AS at
