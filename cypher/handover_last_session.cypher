// The project's most recently active session other than the one waking up.
MATCH (s:Session {project: $project})
WHERE s.id <> $exclude
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       s.last_activity_at AS last_activity_at
ORDER BY s.last_activity_at DESC
LIMIT 1
