// A pass over every session dated those stored before sessions were dated by their work.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.sessions_dated = true
