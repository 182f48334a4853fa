// Exact nearest operations within the given sessions (found by the session/seq index), at
// most $scan operations compared.
UNWIND $sessions AS sid
MATCH (o:Operation {session_id: sid})
WHERE o.seq > 0
WITH o LIMIT $scan
WITH o
WHERE o.project = $project AND o.embedding_model = $model AND o.embedding IS NOT NULL
  AND ($types IS NULL OR o.type IN $types)
  AND ($exclude IS NULL OR NOT (o.session_id = $exclude OR o.session_id STARTS WITH $exclude + ':'))
// Neo4j gives (1 + cosine) / 2, the scale of the vector index's scores.
WITH o, vector.similarity.cosine(o.embedding, $vector) AS cos
ORDER BY cos DESC
LIMIT $k
RETURN o.id AS id, o.session_id AS session_id, coalesce(o.seq, 0) AS seq, o.type AS kind,
       o.role AS role, o.search_text AS text, coalesce(o.at, 0) AS at, cos AS score,
       true AS vectored, o.embedding_sig AS sig
