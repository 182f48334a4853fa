MATCH (d:Decision {id: $id}), (o:Operation {id: $operation_id})
SET o.decision_id = $id
MERGE (o)-[:RECORDS]->(d)
