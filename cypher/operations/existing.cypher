UNWIND $ids AS id
MATCH (o:Operation {id: id})
RETURN o.id AS id, o.session_id AS session_id
