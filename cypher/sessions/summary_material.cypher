// What a session that ends without a summary is summed up from: the summary it may have, its
// last compaction summary, its last assistant turn and its last 200 todo operations (whole
// lists and task updates, folded in order by the caller).
MATCH (s:Session {id: $id, project: $project})
RETURN s.summary AS summary,
       COLLECT {
         MATCH (o:Operation {session_id: $id, project: $project})
         WHERE o.seq >= 0 AND o.tool = $compaction AND o.content IS NOT NULL
         RETURN o.content ORDER BY o.seq DESC LIMIT 1
       }[0] AS compaction,
       COLLECT {
         MATCH (o:Operation {session_id: $id, project: $project})
         WHERE o.seq >= 0 AND o.type = 'message' AND o.role = 'assistant'
         RETURN o.content ORDER BY o.seq DESC LIMIT 1
       }[0] AS last_assistant,
       reverse(COLLECT {
         MATCH (o:Operation {session_id: $id, project: $project})
         WHERE o.seq >= 0 AND o.type = 'todo'
         RETURN {tool: o.tool, todos: o.todos} AS t ORDER BY o.seq DESC LIMIT 200
       }) AS todos
