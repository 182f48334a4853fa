// A pass made every search text cut at a shorter bound than $bound whole again, and stored
// every text's identifiers' parts in form $parts.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.texts_bound = $bound, m.texts_parts = $parts
