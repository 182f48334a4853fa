// The project's most recently active sessions.
MATCH (p:Session {project: $project})
WHERE p.last_activity_at IS NOT NULL
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       p.last_activity_at AS last_activity_at, coalesce(p.op_count, 0) AS operation_count
ORDER BY p.last_activity_at DESC
LIMIT $limit
