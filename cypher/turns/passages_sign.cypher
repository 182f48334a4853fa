// Stores the signatures of passages stored before passages kept them (read whole to be held
// in memory, src/recall/held_vectors.rs), unless they were made again meanwhile.
UNWIND $rows AS row
MATCH (p:Passage {operation_id: row.operation_id})
WHERE p.n = row.n AND p.embedding_model = $model AND p.embedding_sig IS NULL
SET p.embedding_sig = row.sig
