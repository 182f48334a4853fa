MATCH (d:Decision {id: $id}), (o:Operation {id: $operation_id})
SET o.decision_id = $id, o.search_text = $search_text, o.search_parts = $search_parts
MERGE (o)-[:RECORDS]->(d)
