// The session's todo operations in order (the last 200: full lists, and the task updates of
// Claude Code's TaskCreate / TaskUpdate tools folded into them) and the next steps given when
// it closed.
MATCH (s:Session {id: $session_id, project: $project})
OPTIONAL MATCH (o:Operation {session_id: $session_id, project: $project})
USING INDEX o:Operation(session_id, seq)
WHERE o.seq >= 0 AND o.type = 'todo'
WITH s, o ORDER BY o.seq DESC LIMIT 200
WITH s, collect({tool: o.tool, todos: o.todos}) AS lists
RETURN reverse(lists) AS lists, coalesce(s.next_steps, []) AS next_steps
