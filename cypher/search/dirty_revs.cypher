// Up to $limit sessions whose search document is stale, with the revision read now: the
// document is built by a later statement (dirty_sessions.cypher), so it holds at least every
// operation written up to that revision (a capture bumps the revision and appends its
// operations in one transaction).
MATCH (s:Session)
WHERE s.search_dirty = true
WITH s ORDER BY s.last_activity_at
LIMIT $limit
RETURN s.id AS id, s.project AS project, coalesce(s.search_rev, 0) AS rev
