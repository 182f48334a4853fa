// Approximate nearest operations by embedding (the score is (1 + cosine) / 2), only those
// embedded by the configured model, with the filters applied.
CALL db.index.vector.queryNodes('operation_embedding', $wide, $vector) YIELD node, score
WITH node, score
WHERE node.project = $project AND node.embedding_model = $model
  AND ($types IS NULL OR node.type IN $types)
  AND ($sessions IS NULL OR node.session_id IN $sessions)
  AND ($exclude IS NULL OR NOT (node.session_id = $exclude OR node.session_id STARTS WITH $exclude + ':'))
RETURN node.id AS id, node.session_id AS session_id, coalesce(node.seq, 0) AS seq,
       node.type AS kind, node.role AS role, node.search_text AS text,
       coalesce(node.at, 0) AS at, score, true AS vectored, node.embedding_sig AS sig
LIMIT $k
