// The project's most recently active session with content (operations or a summary) other
// than the one waking up; child sessions (subagents' work) are reached through their parent.
// Walked newest first along the (project, last_activity_at) index, which gives that order
// only when asked for both of its properties: the first session with content ends it, where
// sorting read every session of the project (~70 ms at 10,000).
MATCH (s:Session {project: $project})
WHERE s.last_activity_at IS NOT NULL
  AND s.id <> $exclude
  AND s.parent IS NULL
  AND (coalesce(s.op_count, 0) > 0 OR s.summary IS NOT NULL)
WITH s ORDER BY s.project DESC, s.last_activity_at DESC LIMIT 1
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       s.last_activity_at AS last_activity_at
