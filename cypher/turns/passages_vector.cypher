// Approximate nearest passages (src/domain/passages.rs) of the project's operations, only
// those the configured model embedded, with the filters applied: each operation once, scored
// by its best passage ((1 + cosine) / 2).
CALL db.index.vector.queryNodes('passage_embedding', $wide, $vector) YIELD node AS p, score
WITH p, score
WHERE p.project = $project AND p.embedding_model = $model
  AND ($sessions IS NULL OR p.session_id IN $sessions)
  AND ($exclude IS NULL OR NOT (p.session_id = $exclude OR p.session_id STARTS WITH $exclude + ':'))
WITH p.operation_id AS id, max(score) AS score
MATCH (node:Operation {id: id})
WHERE node.project = $project AND node.embedding_model = $model
  AND ($types IS NULL OR node.type IN $types)
RETURN node.id AS id, node.session_id AS session_id, coalesce(node.seq, 0) AS seq,
       node.type AS kind, node.role AS role, node.search_text AS text,
       coalesce(node.at, 0) AS at, score, true AS vectored, node.embedding_sig AS sig
ORDER BY score DESC, id
LIMIT $k
