// The signatures of one project's operation vectors made by $model, to hold them in memory
// (src/recall/held_vectors.rs); no rows when the project has more than $scan operations. A
// vector stored before signatures were kept comes whole.
MATCH (o:Operation {project: $project})
WITH o LIMIT $scan + 1
WITH collect(o) AS ops
RETURN size(ops) <= $scan AS fits,
       CASE WHEN size(ops) <= $scan
         THEN [o IN ops WHERE o.embedding_model = $model AND o.embedding IS NOT NULL
                | {id: o.id, session_id: o.session_id, kind: coalesce(o.type, ''),
                   sig: o.embedding_sig,
                   vector: CASE WHEN o.embedding_sig IS NULL THEN o.embedding END}]
         ELSE [] END AS rows
