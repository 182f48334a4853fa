// A pass made every search text cut at a shorter bound than $bound whole again.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.texts_bound = $bound
