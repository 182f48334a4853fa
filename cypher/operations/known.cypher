// Which of $ids are operations of this project (for triggered_by validation).
UNWIND $ids AS id
MATCH (o:Operation {id: id})
WHERE o.project = $project
RETURN o.id AS id
