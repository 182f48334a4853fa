MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $at
CREATE (b:Belief {id: $id, project: $project, content: $content, category: $category,
                  prior: $prior, conviction: $conviction, status: $status, created_at: $at,
                  updated_at: $at})
RETURN b.id AS id
