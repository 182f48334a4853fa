// Active beliefs of the project, strongest first.
MATCH (b:Belief {project: $project, status: 'active'})
RETURN b.id AS id, b.content AS content, coalesce(b.conviction, b.prior, 0.5) AS conviction
ORDER BY conviction DESC, b.created_at DESC
LIMIT $limit
