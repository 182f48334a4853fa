// Whether a pass over every session has dated those stored before sessions were dated by
// their work (since then capture dates them).
OPTIONAL MATCH (m:SchemaMeta {id: 'cairn'})
RETURN coalesce(m.sessions_dated, false) AS done
