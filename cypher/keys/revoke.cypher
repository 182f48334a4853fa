MATCH (k:ApiKey {id: $id, project: $project})
WHERE k.revoked_at IS NULL
SET k.revoked_at = $at
CREATE (a:AuditEvent {id: $audit_id, project: $project, action: 'key_revoked', key_id: $id,
                      actor: $actor, at: $at})
RETURN k.id AS id
