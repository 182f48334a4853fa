// Bench only: a project's search documents, to embed.
MATCH (s:Session {project: $project})
WHERE s.search_doc IS NOT NULL AND s.embedding IS NULL
RETURN s.id AS id, s.project AS project, s.search_doc AS doc, s.search_doc_hash AS hash
LIMIT $limit
