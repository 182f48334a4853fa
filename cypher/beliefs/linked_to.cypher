// Beliefs of the project with evidence from the given sessions (an operation or decision of
// theirs informs it: link 'session') or from an operation that touched one of the given files
// (link 'file'). One pass over the project's evidence: it is small next to the sessions'
// histories, and a file's history is not read at all.
MATCH (b:Belief {project: $project})<-[:INFORMS]-(x)
WITH b.id AS id,
     CASE
       WHEN x.session_id IN $sessions THEN 'session'
       WHEN x:Operation AND EXISTS { (x)-[:TOUCHED]->(f:File) WHERE f.path IN $files } THEN 'file'
     END AS link
WHERE link IS NOT NULL
RETURN id, collect(DISTINCT link) AS links
