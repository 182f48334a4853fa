// The session's last todo list (as JSON text) and the next steps given when it closed.
MATCH (s:Session {id: $session_id, project: $project})
OPTIONAL MATCH (o:Operation {session_id: $session_id, project: $project})
WHERE o.type = 'todo'
WITH s, o ORDER BY o.seq DESC LIMIT 1
RETURN o.todos AS todos, coalesce(s.next_steps, []) AS next_steps
