// A session and the sessions it continues (transitively, at most 20 back), nearest first.
MATCH path = (s:Session {id: $session_id, project: $project})-[:CONTINUES*0..20]->(p:Session)
WHERE p.project = $project
WITH p, min(length(path)) AS depth
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       p.last_activity_at AS last_activity_at, coalesce(p.op_count, 0) AS operation_count
ORDER BY depth
