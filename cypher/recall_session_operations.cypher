// Every operation of a session in seq order (the reconstruction reads the whole chain).
MATCH (o:Operation {session_id: $session_id, project: $project})
RETURN o.id AS id, o.seq AS seq, o.type AS type, o.target AS target, o.summary AS summary,
       o.tool AS tool, coalesce(o.files_read, []) AS files_read,
       coalesce(o.files_modified, []) AS files_modified, o.role AS role, o.content AS content,
       o.todos AS todos, o.status AS status, o.at AS at, coalesce(o.tokens, 0) AS tokens,
       o.decision_id AS decision_id
ORDER BY o.seq
