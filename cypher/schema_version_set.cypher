MERGE (m:SchemaMeta {id: 'cairn'})
SET m.version = $version, m.applied_at = $now
