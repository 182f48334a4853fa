// The project's latest sessions other than the one starting, for the SessionStart handover.
MATCH (s:Session {project: $project})
WHERE s.id <> $session_id
  AND (s.summary IS NOT NULL OR size(coalesce(s.next_steps, [])) > 0 OR coalesce(s.op_count, 0) > 0)
OPTIONAL MATCH (t:Operation {project: $project, session_id: s.id, type: 'todo'})
WITH s, t ORDER BY t.seq DESC
WITH s, collect(t.todos)[0] AS todos
RETURN s.id AS id, s.status AS status, s.task AS task, s.summary AS summary,
       coalesce(s.next_steps, []) AS next_steps, todos,
       coalesce(s.closed_at, s.last_activity_at) AS at, coalesce(s.op_count, 0) AS operations
ORDER BY at DESC
LIMIT $limit
