// Sessions that touched each file, most recent touch first.
UNWIND $files AS path
MATCH (:File {project: $project, path: path})<-[t:TOUCHED]-(o:Operation)
WITH path, o.session_id AS sid, max(o.at) AS last_at, collect(DISTINCT t.mode) AS modes
MATCH (s:Session {id: sid})
RETURN path, sid AS session_id, s.task AS task, s.summary AS summary, s.status AS status,
       last_at, modes
ORDER BY path, last_at DESC
