MATCH (a:AuditEvent {project: $project})
RETURN a.id AS id, a.action AS action, a.actor AS actor, a.key_id AS key_id,
       a.detail AS detail, a.at AS at
ORDER BY a.at DESC
LIMIT $limit
