// BM25 over turns' search texts (operations, memories, session summaries): the index's best
// $wide, of which the project's first $k. $query narrows to the project inside Lucene, or
// not when the project is nearly the whole index; the WHERE makes it exact and applies the
// filters. An operation's vector signature comes along when $model made its vector. A
// session summary stands at its session's last activity: its last operation, the work it
// recaps (a close is not activity, and sessions are dated by their work).
CALL db.index.fulltext.queryNodes('turn_search', $query, {limit: $wide}) YIELD node, score
WITH node, score,
     CASE WHEN node:Operation THEN node.type WHEN node:Memory THEN 'memory' ELSE 'summary' END AS kind,
     CASE WHEN node:Session THEN node.id ELSE node.session_id END AS session_id
WHERE node.project = $project
  AND ($types IS NULL OR kind IN $types)
  AND ($sessions IS NULL OR session_id IN $sessions)
  AND ($exclude IS NULL OR NOT (coalesce(session_id, '') = $exclude OR coalesce(session_id, '') STARTS WITH $exclude + ':'))
RETURN CASE WHEN node:Session THEN 'summary:' + node.id ELSE node.id END AS id,
       coalesce(session_id, '') AS session_id,
       CASE WHEN node:Session THEN coalesce(node.last_seq, 0) ELSE coalesce(node.seq, 0) END AS seq,
       kind, node.role AS role, node.search_text AS text,
       coalesce(node.at, node.last_activity_at, node.closed_at, 0) AS at, score,
       node:Operation AND coalesce(node.embedding_model = $model, false) AS vectored,
       CASE WHEN node:Operation AND node.embedding_model = $model THEN node.embedding_sig END AS sig
LIMIT $k
