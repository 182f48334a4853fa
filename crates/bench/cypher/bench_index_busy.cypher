// Recall benchmark: sessions of the project the background indexers still work on.
MATCH (s:Session {project: $project})
WHERE s.search_dirty = true OR s.embed_pending = true OR s.turns_pending = true
RETURN count(s) AS n
