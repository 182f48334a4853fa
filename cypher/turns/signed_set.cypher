// A pass over every operation gave each stored vector its signature.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.vectors_signed = true
