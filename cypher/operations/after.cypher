// A session's operations after seq $after (0: all of them), in seq order. The
// (session_id, seq) index is named explicitly so the seq range is read from it.
MATCH (o:Operation {session_id: $session_id, project: $project})
USING INDEX o:Operation(session_id, seq)
WHERE o.seq > $after
RETURN o.id AS id, o.seq AS seq, o.type AS type, o.target AS target, o.summary AS summary,
       o.tool AS tool, coalesce(o.files_read, []) AS files_read,
       coalesce(o.files_modified, []) AS files_modified, o.role AS role, o.content AS content,
       o.todos AS todos, o.status AS status, o.at AS at, coalesce(o.tokens, 0) AS tokens,
       o.decision_id AS decision_id
ORDER BY o.seq
