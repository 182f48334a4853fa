// Stores embeddings with the model and dimension that made them, unless the document changed while it was being embedded (then the
// session stays pending and is embedded again). $holder's claim on each session ends.
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
FOREACH (_ IN CASE WHEN s.index_claim_holder = $holder THEN [1] ELSE [] END |
  REMOVE s.index_claim_holder, s.index_claim_until)
WITH s, row
WHERE s.search_doc_hash = row.hash
CALL db.create.setNodeVectorProperty(s, 'embedding', row.vector)
SET s.embedding_model = $model, s.embedding_dim = $dim,
    s.embed_pending = false, s.embed_attempts = 0, s.embed_retry_at = null,
    s.embed_failed_by = null,
    s.embedded_at = $now
