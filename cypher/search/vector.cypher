// Approximate nearest sessions by embedding of the configured model (the score is (1 + cosine) / 2).
CALL db.index.vector.queryNodes('session_embedding', $k, $vector) YIELD node, score
WHERE node.project = $project AND node.embedding_model = $model
RETURN node.id AS id, score
