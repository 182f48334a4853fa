UNWIND $links AS l
MATCH (a:Operation {id: l.id}), (b:Operation {id: l.prev})
CREATE (a)-[:FOLLOWS]->(b)
