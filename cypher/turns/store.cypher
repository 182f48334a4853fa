// Stores what the turn indexer made: a search text where the operation had none (captured
// before the turn index), and a vector with the model and dimension that made it and its
// signature (src/embed/signature.rs).
// Nothing is stored for a session reset since the pass read it (`row.resets`: a text made
// whole again meanwhile, whose old text the vector was made from).
UNWIND $rows AS row
MATCH (o:Operation {id: row.id})
WHERE EXISTS {
  MATCH (s:Session {id: o.session_id, project: o.project})
  WHERE coalesce(s.turns_resets, 0) = row.resets
}
SET o.search_parts = CASE WHEN o.search_text IS NULL THEN row.parts ELSE o.search_parts END
SET o.search_text = coalesce(o.search_text, row.text)
WITH o, row
WHERE row.vector IS NOT NULL
CALL db.create.setNodeVectorProperty(o, 'embedding', row.vector)
SET o.embedding_model = $model, o.embedding_dim = $dim, o.embedding_sig = row.sig
