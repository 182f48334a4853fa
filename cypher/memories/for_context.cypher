// The project's memories, newest first.
MATCH (m:Memory {project: $project})
RETURN m.id AS id, m.kind AS kind, m.content AS content, m.confidence AS confidence,
       m.session_id AS session_id, coalesce(m.tokens, 0) AS tokens, m.at AS at
ORDER BY m.at DESC
LIMIT $limit
