// Stores what the turn indexer made: a search text where the operation had none (captured
// before the turn index), and a vector with the model and dimension that made it and its
// signature (src/embed/signature.rs).
UNWIND $rows AS row
MATCH (o:Operation {id: row.id})
SET o.search_text = coalesce(o.search_text, row.text)
WITH o, row
WHERE row.vector IS NOT NULL
CALL db.create.setNodeVectorProperty(o, 'embedding', row.vector)
SET o.embedding_model = $model, o.embedding_dim = $dim, o.embedding_sig = row.sig
