// Never lowers the recorded version: an older binary against a newer graph leaves it be.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.version = CASE WHEN m.version IS NULL OR m.version < $version THEN $version ELSE m.version END,
    m.applied_at = $now
