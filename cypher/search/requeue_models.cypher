// One page of sessions (by id, after $after): those whose embedding another model made (or
// one that predates recording the model) are embedded again with the configured model;
// search compares only its vectors.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
WITH s, s.embedding IS NOT NULL AND coalesce(s.embedding_model, '') <> $model
        AND NOT coalesce(s.embed_pending, false) AS stale
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END | SET s.embed_pending = true)
RETURN max(s.id) AS last, count(s) AS scanned,
       sum(CASE WHEN stale THEN 1 ELSE 0 END) AS sessions, 0 AS operations,
       [] AS models
