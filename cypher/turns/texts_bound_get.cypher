// The bound on search texts (characters) of the last pass that made every text cut at a
// shorter one whole again, the form of the identifiers' parts it stored and the form of the
// texts it made; null before the first.
OPTIONAL MATCH (m:SchemaMeta {id: 'cairn'})
RETURN m.texts_bound AS bound, m.texts_parts AS parts, m.texts_form AS form
