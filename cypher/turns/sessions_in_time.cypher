// The project's sessions active within a span of time ($from inclusive, $to exclusive), those
// whose activity ended first (closest to the span) first. The limit is taken in the order of
// the (project, last_activity_at) index, so the seek stops after $limit matches instead of
// reading every session active since $from; sessions ending in the same millisecond at the
// limit are taken in the index's order, the rest sorted by id.
MATCH (s:Session {project: $project})
WHERE s.last_activity_at >= $from AND s.started_at < $to
WITH s
ORDER BY s.project ASC, s.last_activity_at ASC
LIMIT $limit
RETURN s.id AS id
ORDER BY s.last_activity_at ASC, id
