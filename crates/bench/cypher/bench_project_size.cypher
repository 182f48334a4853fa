// Recall benchmark: how many sessions and operations a project already holds.
OPTIONAL MATCH (s:Session {project: $project})
WITH count(s) AS sessions, sum(coalesce(s.op_count, 0)) AS operations
RETURN sessions, operations
