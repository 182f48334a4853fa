// A session's search document is stale (a decision arrived); the indexer rebuilds it.
MATCH (s:Session {id: $session_id, project: $project})
SET s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1
