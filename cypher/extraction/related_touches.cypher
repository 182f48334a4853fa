// Reads and writes of $paths in the project's other sessions, for cross-session mining.
UNWIND $paths AS path
MATCH (f:File {project: $project, path: path})<-[t:TOUCHED]-(o:Operation)
WHERE o.project = $project AND o.session_id <> $session_id
RETURN o.session_id AS session_id, o.id AS id, o.seq AS seq, t.mode AS mode, f.path AS path
ORDER BY session_id, seq
LIMIT $limit
