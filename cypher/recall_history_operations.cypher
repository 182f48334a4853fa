// Context history: for each page {id, before}, that session's operations with seq below
// `before`, newest first, at most $limit per session.
UNWIND $pages AS page
CALL (page) {
  MATCH (o:Operation {session_id: page.id, project: $project})
  USING INDEX o:Operation(session_id, seq)
  WHERE o.seq < page.before
  RETURN o
  ORDER BY o.seq DESC
  LIMIT $limit
}
RETURN page.id AS session_id, o.seq AS seq, o.type AS type, o.target AS target,
       o.summary AS summary, o.role AS role, o.content AS content,
       coalesce(o.tokens, 0) AS tokens
