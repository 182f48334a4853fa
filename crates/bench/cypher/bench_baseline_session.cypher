// Ingest benchmark: a session of the baseline's project, written straight to the graph.
MERGE (x:Session {id: $id})
SET x.project = $project
