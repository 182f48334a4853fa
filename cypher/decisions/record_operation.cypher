MATCH (d:Decision {id: $id}), (o:Operation {id: $operation_id})
SET o.decision_id = $id, o.search_text = $search_text
MERGE (o)-[:RECORDS]->(d)
