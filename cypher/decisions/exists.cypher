OPTIONAL MATCH (d:Decision {id: $id})
RETURN d IS NOT NULL AS exists
