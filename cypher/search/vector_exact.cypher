// Exact nearest sessions of one project, for when the approximate index returned too few of
// this project's sessions (the index is shared by every project). Nothing when the project
// has more than $scan sessions: comparing them all would cost more than a search may.
MATCH (s:Session {project: $project})
WITH s LIMIT $scan + 1
WITH collect(s) AS sessions
WHERE size(sessions) <= $scan
UNWIND sessions AS s
WITH s
WHERE s.embedding IS NOT NULL AND s.embedding_model = $model
WITH s, vector.similarity.cosine(s.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $k
RETURN s.id AS id, score
