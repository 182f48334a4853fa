MATCH (d:Decision {id: $id})
UNWIND $options AS opt
CREATE (o:Option {id: opt.id, project: $project, text: opt.text, chosen: opt.chosen})
FOREACH (_ IN CASE WHEN opt.chosen THEN [1] ELSE [] END | CREATE (d)-[:CHOSE]->(o))
FOREACH (_ IN CASE WHEN opt.chosen THEN [] ELSE [1] END | CREATE (d)-[:REJECTED]->(o))
