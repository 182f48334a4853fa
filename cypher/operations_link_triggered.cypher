UNWIND $links AS l
MATCH (a:Operation {id: l.id}), (b:Operation {id: l.target})
WHERE b.project = $project
MERGE (a)-[:TRIGGERED_BY]->(b)
