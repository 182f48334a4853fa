// One page of sessions (by id, after $after) dated by their work, as capture dates them now:
// a session whose first operation is older than its start (history imported without the
// session's own times, so it began at the server's clock) starts at that operation and was
// last active at its last one. Other sessions are left as they are.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
CALL (s) {
  OPTIONAL MATCH (o:Operation {session_id: s.id})
  WHERE o.seq IS NOT NULL AND o.project = s.project
  RETURN min(o.at) AS first, max(o.at) AS last
}
WITH s, first, last, first IS NOT NULL AND first < s.started_at AS undated
FOREACH (_ IN CASE WHEN undated THEN [1] ELSE [] END |
  SET s.started_at = first, s.last_activity_at = last)
RETURN max(s.id) AS last, count(s) AS scanned,
       sum(CASE WHEN undated THEN 1 ELSE 0 END) AS sessions, 0 AS operations, [] AS models
