// Recall benchmark: sessions of the project the benchmark's server still has work on. Without
// vectors ($vectors false) a session queued for vectors (by another instance with a model, on a
// shared database) is no work of its own once its texts are in. A session without a search
// document yet (seeded straight into Neo4j) is queued by the server's start-up pass, which may
// run after the first look: it counts as work already.
MATCH (s:Session {project: $project})
WHERE s.search_dirty = true
   OR s.search_rev IS NULL
   OR ($vectors AND (s.embed_pending = true OR s.turns_pending = true))
   OR (s.turns_pending = true AND coalesce(s.turns_text_seq, 0) < coalesce(s.last_seq, 0))
RETURN count(s) AS n
