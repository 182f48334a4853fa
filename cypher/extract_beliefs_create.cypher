// New proposed beliefs suggested by extraction.
MERGE (proj:Project {id: $project})
  ON CREATE SET proj.project = $project, proj.created_at = $now
WITH proj
UNWIND $rows AS row
CREATE (b:Belief {id: row.id, project: $project, content: row.content, category: row.category,
                  content_key: row.content_key, prior: row.prior, conviction: row.prior,
                  status: 'proposed', source: 'extraction', created_at: $now, updated_at: $now})
