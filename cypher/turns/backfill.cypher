// Sessions the turn indexer never processed (captured before the turn index existed) and,
// with an embedding model ($model not empty), those processed without it or under another
// model are queued for the turn indexer.
MATCH (s:Session)
WHERE s.turns_text_seq IS NULL OR ($model <> '' AND coalesce(s.turns_model, '') <> $model)
SET s.turns_pending = true
RETURN count(s) AS sessions, coalesce(sum(coalesce(s.last_seq, 0)), 0) AS operations
