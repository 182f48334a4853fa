// Pattern → belief evidence. Merged, so the same pattern never counts twice.
UNWIND $rows AS row
MATCH (p:Pattern {id: row.pattern, project: $project}), (b:Belief {id: row.belief, project: $project})
MERGE (p)-[r:INFORMS]->(b)
  ON CREATE SET r.effect = row.effect, r.weight = row.weight, r.at = row.at, r.run_id = $run_id,
                b.evidence_writes = coalesce(b.evidence_writes, 0) + 1
