MATCH (s:Session {id: $session_id, project: $project})
UNWIND $rows AS row
CREATE (o:Operation)
SET o = row, o.project = $project, o.session_id = $session_id, o.created_at = $now
CREATE (o)-[:PART_OF]->(s)
