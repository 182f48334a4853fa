// The stored vectors of some operations, when the configured model made them (diversity).
UNWIND $ids AS id
MATCH (o:Operation {id: id})
WHERE o.project = $project AND o.embedding_model = $model
RETURN o.id AS id, o.embedding AS vector
