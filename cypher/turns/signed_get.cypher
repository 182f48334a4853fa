// Whether a pass over every operation has given the vectors stored before signatures were
// kept theirs (since then the turn indexer stores each vector with its signature).
OPTIONAL MATCH (m:SchemaMeta {id: 'cairn'})
RETURN coalesce(m.vectors_signed, false) AS done
