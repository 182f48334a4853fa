// A session's task and summary, and its operations in order with the files they touched.
MATCH (s:Session {id: $session_id, project: $project})
// The (session_id, seq) index is named: without a seq predicate the planner scans every
// operation in the graph.
OPTIONAL MATCH (o:Operation {session_id: $session_id})
USING INDEX o:Operation(session_id, seq)
WHERE o.seq >= 0 AND o.project = $project
OPTIONAL MATCH (o)-[t:TOUCHED]->(f:File)
WITH s, o, collect(CASE WHEN f IS NULL THEN NULL ELSE {mode: t.mode, path: f.path} END) AS touches
ORDER BY o.seq ASC
RETURN s.task AS task, s.summary AS summary,
       collect(CASE WHEN o IS NULL THEN NULL ELSE
         {id: o.id, seq: o.seq, type: o.type, target: o.target, summary: o.summary, tool: o.tool,
          status: coalesce(o.status, 'ok'), role: o.role, content: o.content, at: o.at,
          decision_id: o.decision_id, touches: touches} END) AS operations
