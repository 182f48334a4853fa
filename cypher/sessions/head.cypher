// One session of a project, with the LLM summary the extraction job may have stored.
MATCH (s:Session {id: $session_id, project: $project})
OPTIONAL MATCH (s)-[:CONTINUES]->(prev:Session)
RETURN s.id AS id, s.agent AS agent, s.task AS task, s.status AS status,
       s.summary AS summary, s.llm_summary AS llm_summary,
       coalesce(s.next_steps, []) AS next_steps, s.started_at AS started_at,
       s.closed_at AS closed_at, s.last_activity_at AS last_activity_at,
       coalesce(s.op_count, 0) AS operation_count, prev.id AS continues
