// Maintenance sweep across projects: active sessions idle since before $cutoff.
MATCH (s:Session {status: 'active'})
WHERE s.last_activity_at < $cutoff
SET s.status = 'abandoned', s.closed_at = $now
RETURN count(s) AS abandoned
