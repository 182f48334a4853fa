// Task context: the project's sessions with these ids, as a context draws on them.
MATCH (p:Session)
WHERE p.id IN $ids AND p.project = $project
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       coalesce(p.last_activity_at, p.started_at) AS last_activity_at,
       coalesce(p.op_count, 0) AS operation_count
