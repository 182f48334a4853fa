// Status and content key of the named beliefs of the project.
UNWIND $ids AS id
MATCH (b:Belief {id: id, project: $project})
RETURN b.id AS id, b.status AS status
