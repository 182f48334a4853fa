// One page of sessions (by id, after $after): those captured before search documents existed
// get one on the next indexer pass.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
WITH s, s.search_rev IS NULL AS stale
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END | SET s.search_dirty = true, s.search_rev = 1)
RETURN max(s.id) AS last, count(s) AS scanned,
       sum(CASE WHEN stale THEN 1 ELSE 0 END) AS sessions, 0 AS operations,
       [] AS models
