// Which evidence keys and content keys already led to a rejected belief.
MATCH (b:Belief {project: $project, status: 'rejected'})
OPTIONAL MATCH (p:Pattern)-[:INFORMS]->(b)
WITH b, collect(p.evidence_key) AS evidence_keys
WHERE b.content_key IN $content_keys
   OR any(k IN evidence_keys WHERE k IN $evidence_keys)
RETURN b.content_key AS content_key, evidence_keys
