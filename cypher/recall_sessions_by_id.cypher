// Sessions of the project by id (the ones search found for a task).
UNWIND $ids AS sid
MATCH (p:Session {id: sid, project: $project})
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       p.last_activity_at AS last_activity_at, coalesce(p.op_count, 0) AS operation_count
