MATCH (s:Session {id: $id})
OPTIONAL MATCH (s)-[:CONTINUES]->(prev:Session)
RETURN s.id AS id, s.project AS project, s.agent AS agent, s.task AS task, s.cwd AS cwd,
       s.status AS status, s.summary AS summary, coalesce(s.next_steps, []) AS next_steps,
       s.started_at AS started_at, s.closed_at AS closed_at,
       s.last_activity_at AS last_activity_at, coalesce(s.op_count, 0) AS operation_count,
       prev.id AS continues, s.parent AS parent, s.spawned_by AS spawned_by,
       s.agent_type AS agent_type
