// A session's operations newest first, at most $limit (context history).
MATCH (o:Operation {session_id: $session_id, project: $project})
RETURN o.seq AS seq, o.type AS type, o.target AS target, o.summary AS summary,
       o.role AS role, o.content AS content, coalesce(o.tokens, 0) AS tokens
ORDER BY o.seq DESC
LIMIT $limit
