// Replaces operations' passages (src/domain/passages.rs): each operation's earlier passages
// are deleted and its new vectors stored, recording the model and dimension that made them;
// the operation records that model (`passages_model`), also when its text is one passage.
// Each passage keeps its vector's signature (src/embed/signature.rs).
// Nothing is stored for a session reset since the pass read it (`row.resets`).
UNWIND $rows AS row
MATCH (o:Operation {id: row.id})
WHERE EXISTS {
  MATCH (s:Session {id: o.session_id, project: o.project})
  WHERE coalesce(s.turns_resets, 0) = row.resets
}
SET o.passages_model = $model
WITH o, row
CALL (o) {
  MATCH (old:Passage {operation_id: o.id})
  DELETE old
}
WITH o, row
UNWIND range(0, size(row.vectors) - 1) AS i
CREATE (p:Passage {operation_id: o.id, project: o.project, session_id: o.session_id, n: i,
                   embedding_model: $model, embedding_dim: $dim,
                   embedding_sig: row.sigs[i]})
WITH p, row.vectors[i] AS vector
CALL db.create.setNodeVectorProperty(p, 'embedding', vector)
