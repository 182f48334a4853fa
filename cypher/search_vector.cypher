// Approximate nearest sessions by embedding (the score is (1 + cosine) / 2).
CALL db.index.vector.queryNodes('session_embedding', $k, $vector) YIELD node, score
WHERE node.project = $project
RETURN node.id AS id, score
