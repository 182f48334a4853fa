UNWIND $informs AS i
MATCH (o:Operation {id: i.id}), (b:Belief {id: i.belief, project: $project})
MERGE (o)-[r:INFORMS]->(b)
SET r.effect = i.effect, r.weight = i.weight, r.at = i.at
