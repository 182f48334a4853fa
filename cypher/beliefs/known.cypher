UNWIND $ids AS id
MATCH (b:Belief {id: id, project: $project})
RETURN b.id AS id
