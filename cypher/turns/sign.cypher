// Stores the signatures of vectors stored without one, unless another model's vector
// replaced the one read meanwhile (the indexer stores that one with its signature).
UNWIND $rows AS row
MATCH (o:Operation {id: row.id})
WHERE o.embedding_model = row.model AND o.embedding_sig IS NULL
SET o.embedding_sig = row.sig
