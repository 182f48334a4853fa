// New proposed beliefs suggested by extraction, one per normalised content (the uniqueness
// constraint on (project, content_key) makes concurrent sessions agree on one node).
// `created` is false when another session's transaction got there first.
MERGE (proj:Project {id: $project})
  ON CREATE SET proj.project = $project, proj.created_at = $now
WITH proj
UNWIND $rows AS row
MERGE (b:Belief {project: $project, content_key: row.content_key})
  ON CREATE SET b.id = row.id, b.content = row.content, b.category = row.category,
                b.prior = row.prior, b.conviction = row.prior, b.status = 'proposed',
                b.source = 'extraction', b.created_at = $now, b.updated_at = $now
RETURN row.id AS proposed, b.id AS id, b.id = row.id AS created
