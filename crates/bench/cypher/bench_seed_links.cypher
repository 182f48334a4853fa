// Recall benchmark: CONTINUES links between seeded sessions.
UNWIND $links AS l
MATCH (a:Session {id: l.id, project: $project}), (b:Session {id: l.prev, project: $project})
MERGE (a)-[:CONTINUES]->(b)
