// A session's conversation turns, newest first, at most $limit, with how many there are.
MATCH (o:Operation {session_id: $session_id, project: $project})
USING INDEX o:Operation(session_id, seq)
WHERE o.seq >= 0 AND o.type = 'message'
WITH o ORDER BY o.seq DESC
WITH collect(o) AS turns
UNWIND turns[0..$limit] AS o
RETURN o.seq AS seq, o.role AS role, o.content AS content, o.summary AS summary,
       coalesce(o.tokens, 0) AS tokens, size(turns) AS total
