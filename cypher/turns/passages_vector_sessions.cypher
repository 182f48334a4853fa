// Exact nearest passages within the given sessions, at most $scan passages compared. Each
// operation once, scored by its best passage.
UNWIND $sessions AS sid
MATCH (p:Passage {session_id: sid})
WITH p LIMIT $scan
WITH p
WHERE p.project = $project AND p.embedding_model = $model
  AND ($exclude IS NULL OR NOT (p.session_id = $exclude OR p.session_id STARTS WITH $exclude + ':'))
// Neo4j gives (1 + cosine) / 2, the scale of the vector index's scores.
WITH p.operation_id AS id, max(vector.similarity.cosine(p.embedding, $vector)) AS cos
MATCH (o:Operation {id: id})
WHERE o.project = $project AND o.embedding_model = $model
  AND ($types IS NULL OR o.type IN $types)
WITH o, cos
ORDER BY cos DESC, o.id
LIMIT $k
RETURN o.id AS id, o.session_id AS session_id, coalesce(o.seq, 0) AS seq, o.type AS kind,
       o.role AS role, o.search_text AS text, coalesce(o.at, 0) AS at, cos AS score,
       true AS vectored, o.embedding_sig AS sig
