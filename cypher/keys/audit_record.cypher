CREATE (a:AuditEvent {id: $id, project: $project, action: $action, actor: $actor,
                      detail: $detail, at: $at})
