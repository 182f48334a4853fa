// Exact nearest operations of one project, for when the shared approximate index returned
// too few; at most $scan operations of the project are compared.
MATCH (o:Operation {project: $project})
WITH o LIMIT $scan
WITH o
WHERE o.embedding_model = $model AND o.embedding IS NOT NULL
  AND ($types IS NULL OR o.type IN $types)
  AND ($exclude IS NULL OR NOT (o.session_id = $exclude OR o.session_id STARTS WITH $exclude + ':'))
// Neo4j gives (1 + cosine) / 2, the scale of the vector index's scores.
WITH o, vector.similarity.cosine(o.embedding, $vector) AS cos
ORDER BY cos DESC
LIMIT $k
RETURN o.id AS id, o.session_id AS session_id, coalesce(o.seq, 0) AS seq, o.type AS kind,
       o.role AS role, o.search_text AS text, coalesce(o.at, 0) AS at, cos AS score,
       true AS vectored, o.embedding_sig AS sig
