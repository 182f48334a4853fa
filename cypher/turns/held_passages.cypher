// The signatures of one project's passage vectors made by $model, each with its operation, to
// hold them in memory (src/recall/held_vectors.rs); no rows when the project has more than
// $scan passages. A vector stored before passages kept signatures comes whole, with its place
// among its operation's passages so its signature can be stored.
MATCH (p:Passage {project: $project})
WITH p LIMIT $scan + 1
WITH collect(p) AS passages
RETURN size(passages) <= $scan AS fits,
       CASE WHEN size(passages) <= $scan
         THEN [p IN passages WHERE p.embedding_model = $model
                | {id: p.operation_id, n: p.n, session_id: p.session_id, kind: '',
                   sig: p.embedding_sig,
                   vector: CASE WHEN p.embedding_sig IS NULL THEN p.embedding END}]
         ELSE [] END AS rows
