// Sessions active since $since, counted by the day they were last active, with their
// operations: the web UI's activity plot.
MATCH (s:Session {project: $project})
WHERE s.last_activity_at >= $since
WITH s.last_activity_at / 86400000 AS day, count(*) AS sessions,
     sum(coalesce(s.op_count, 0)) AS operations
RETURN day, sessions, operations
ORDER BY day
