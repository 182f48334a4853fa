// One page of sessions (by id, after $after): those captured before search documents existed
// get one on the next indexer pass, and so do those whose document's identifiers were parted
// in another form than $form, or not at all.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
WITH s, s.search_rev IS NULL AS stale,
     s.search_doc IS NOT NULL AND coalesce(s.search_doc_form, 0) <> $form AS unparted
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END | SET s.search_dirty = true, s.search_rev = 1)
FOREACH (_ IN CASE WHEN unparted AND NOT stale THEN [1] ELSE [] END | SET s.search_dirty = true)
RETURN max(s.id) AS last, count(s) AS scanned,
       sum(CASE WHEN stale OR unparted THEN 1 ELSE 0 END) AS sessions, 0 AS operations,
       [] AS models
