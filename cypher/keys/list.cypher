MATCH (k:ApiKey {project: $project})
RETURN k.id AS id, k.project AS project, k.scope AS scope, k.label AS label,
       k.created_at AS created_at, k.revoked_at AS revoked_at
ORDER BY k.created_at DESC
