OPTIONAL MATCH (m:SchemaMeta {id: 'cairn'})
RETURN m.version AS version
