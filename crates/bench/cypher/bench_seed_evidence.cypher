// Read benchmarks: proposed beliefs, and operations informing beliefs (evidence). Merged on
// ids, so a seed completed after an interruption adds nothing twice.
UNWIND $proposed AS p
MERGE (b:Belief {id: p.id})
  ON CREATE SET b.project = $project, b.content = p.content, b.category = 'bench', b.prior = 0.5,
                b.conviction = 0.55, b.status = 'proposed', b.created_at = p.at, b.updated_at = p.at
WITH count(*) AS made
UNWIND $rows AS row
MATCH (o:Operation {id: row.op})
MATCH (b:Belief {id: row.belief, project: $project})
MERGE (o)-[r:INFORMS]->(b)
  ON CREATE SET r.effect = row.effect, r.weight = row.weight, r.at = row.at
