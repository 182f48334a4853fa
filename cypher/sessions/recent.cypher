// The project's most recently active sessions, walked newest first along the
// (project, last_activity_at) index (which gives that order when asked for both).
MATCH (p:Session {project: $project})
WHERE p.last_activity_at IS NOT NULL
WITH p ORDER BY p.project DESC, p.last_activity_at DESC LIMIT $limit
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       p.last_activity_at AS last_activity_at, coalesce(p.op_count, 0) AS operation_count
ORDER BY last_activity_at DESC
