// Maintenance sweep across projects: active sessions idle since before $cutoff, with whether
// they still need a summary.
MATCH (s:Session {status: 'active'})
WHERE s.last_activity_at < $cutoff
SET s.status = 'abandoned', s.closed_at = $now
RETURN s.project AS project, s.id AS id, s.summary IS NULL AS needs_summary
