CREATE (k:ApiKey {id: $id, project: $project, scope: $scope, hash: $hash, label: $label,
                  created_at: $at, revoked_at: null})
CREATE (a:AuditEvent {id: $audit_id, project: $project, action: 'key_created', key_id: $id,
                      scope: $scope, actor: $actor, at: $at})
