// Files written in at least $min_sessions of the given (related) sessions.
UNWIND $ids AS id
MATCH (s:Session {id: id, project: $project})<-[:PART_OF]-(:Operation)-[:TOUCHED {mode: 'write'}]->(f:File)
WITH f.path AS path, count(DISTINCT s) AS sessions
WHERE sessions >= $min_sessions
RETURN path, sessions
ORDER BY sessions DESC, path
LIMIT 10
