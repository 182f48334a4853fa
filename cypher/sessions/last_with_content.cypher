// The project's most recently active session with content (operations or a summary) other
// than the one waking up; child sessions (subagents' work) are reached through their parent.
// With $own, the waking session itself (a resumed or compacted session's own recap).
MATCH (s:Session {project: $project})
WHERE CASE WHEN $own THEN s.id = $exclude ELSE s.id <> $exclude END
  AND s.parent IS NULL
  AND (coalesce(s.op_count, 0) > 0 OR s.summary IS NOT NULL)
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       s.last_activity_at AS last_activity_at
ORDER BY s.last_activity_at DESC
LIMIT 1
