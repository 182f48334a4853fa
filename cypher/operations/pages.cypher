// Context history: for each page {id, before}, that session's operations with seq below
// `before`, newest first, at most $limit per session (every column of a reconstruction, so
// a page that holds a whole session can be cached as its log).
UNWIND $pages AS page
CALL (page) {
  MATCH (o:Operation {session_id: page.id, project: $project})
  USING INDEX o:Operation(session_id, seq)
  WHERE o.seq < page.before
  RETURN o
  ORDER BY o.seq DESC
  LIMIT $limit
}
RETURN page.id AS session_id, o.id AS id, o.seq AS seq, o.type AS type, o.target AS target,
       o.summary AS summary, o.tool AS tool, coalesce(o.files_read, []) AS files_read,
       coalesce(o.files_modified, []) AS files_modified, o.role AS role, o.content AS content,
       o.todos AS todos, o.status AS status, o.at AS at, coalesce(o.tokens, 0) AS tokens,
       o.decision_id AS decision_id
