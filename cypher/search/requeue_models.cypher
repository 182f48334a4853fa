// Sessions whose embedding another model made (or one that predates recording the model)
// are embedded again with the configured model; search compares only its vectors.
MATCH (s:Session)
WHERE s.embedding IS NOT NULL AND coalesce(s.embedding_model, '') <> $model
SET s.embed_pending = true
RETURN count(s) AS queued
