// A session's child sessions (subagents it launched), oldest first.
MATCH (c:Session {project: $project})-[:CHILD_OF]->(:Session {id: $session_id, project: $project})
RETURN c.id AS id, c.agent_type AS agent_type, c.task AS task, c.summary AS summary,
       c.status AS status, coalesce(c.op_count, 0) AS operations
ORDER BY c.started_at
LIMIT $limit
