// Ingest baseline: the same rows with a plain UNWIND, no service in between.
MATCH (s:Session {id: $session_id})
UNWIND $rows AS row
CREATE (o:Operation)
SET o = row, o.project = $project, o.session_id = $session_id
CREATE (o)-[:PART_OF]->(s)
