MATCH (k:ApiKey {id: $id})
RETURN k.project AS project, k.scope AS scope, k.hash AS hash, k.revoked_at AS revoked_at
