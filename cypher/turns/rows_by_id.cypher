// The rows of operations ranked by their vectors in memory (src/recall/held_vectors.rs), as
// they are now: those deleted since, or embedded by another model since, are left out; each
// says whether it has passages of the model. The score is set by the caller.
UNWIND $ids AS id
MATCH (o:Operation {id: id})
WHERE o.project = $project AND o.embedding_model = $model
RETURN o.id AS id, o.session_id AS session_id, coalesce(o.seq, 0) AS seq, o.type AS kind,
       o.role AS role, o.search_text AS text, coalesce(o.at, 0) AS at, 0.0 AS score,
       true AS vectored, o.embedding_sig AS sig,
       EXISTS { MATCH (p:Passage {operation_id: o.id}) WHERE p.embedding_model = $model }
         AS passaged
