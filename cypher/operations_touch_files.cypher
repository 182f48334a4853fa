UNWIND $touches AS t
MATCH (o:Operation {id: t.id})
MERGE (f:File {project: $project, path: t.path})
  ON CREATE SET f.created_at = t.at
SET f.last_touched_at = CASE WHEN f.last_touched_at IS NULL OR t.at > f.last_touched_at
                             THEN t.at ELSE f.last_touched_at END
MERGE (o)-[:TOUCHED {mode: t.mode}]->(f)
