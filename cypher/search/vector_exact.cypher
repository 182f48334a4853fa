// Exact nearest sessions of one project, for when the approximate index returned too few
// of this project's sessions (the index is shared by every project).
MATCH (s:Session {project: $project})
WHERE s.embedding IS NOT NULL AND s.embedding_model = $model
WITH s, vector.similarity.cosine(s.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $k
RETURN s.id AS id, score
