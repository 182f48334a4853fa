// Task context: the operations at the given {session_id, seq} positions of the project (the
// relevant ones and their neighbours), every column a context line needs: a tool call's
// free-form context too, which holds what it answered.
UNWIND $keys AS k
MATCH (o:Operation {session_id: k.session_id, seq: k.seq})
USING INDEX o:Operation(session_id, seq)
WHERE o.project = $project
RETURN o.session_id AS session_id, o.id AS id, o.seq AS seq, o.type AS type,
       o.target AS target, o.summary AS summary, o.tool AS tool,
       coalesce(o.files_read, []) AS files_read, coalesce(o.files_modified, []) AS files_modified,
       o.role AS role, o.content AS content, o.todos AS todos, o.status AS status, o.at AS at,
       coalesce(o.tokens, 0) AS tokens, o.decision_id AS decision_id,
       CASE WHEN o.type = 'tool_call' THEN o.context END AS context
