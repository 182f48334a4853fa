// The project's sessions active within a span of time ($from inclusive, $to exclusive), those
// whose activity ended first (closest to the span) first.
MATCH (s:Session {project: $project})
WHERE s.last_activity_at >= $from AND s.started_at < $to
RETURN s.id AS id
ORDER BY s.last_activity_at ASC, s.id
LIMIT $limit
