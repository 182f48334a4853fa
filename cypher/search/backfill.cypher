// Sessions captured before search documents existed get one on the next indexer pass.
MATCH (s:Session)
WHERE s.search_rev IS NULL
SET s.search_dirty = true, s.search_rev = 1
RETURN count(s) AS marked
