MATCH (d:Decision {id: $id})
UNWIND $beliefs AS b
MATCH (belief:Belief {id: b.id, project: $project})
MERGE (d)-[r:INFORMS]->(belief)
SET r.effect = b.effect, r.weight = b.weight, r.at = $at,
    belief.evidence_writes = coalesce(belief.evidence_writes, 0) + 1
