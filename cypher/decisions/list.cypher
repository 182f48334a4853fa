// Decision history of a project, newest first; optionally one subject, or decisions about a
// file (listed in their files, or naming the path in their text).
MATCH (d:Decision {project: $project})
WHERE ($subject_key IS NULL OR d.subject_key = $subject_key)
  AND ($file IS NULL OR $file IN coalesce(d.files, [])
       OR d.subject CONTAINS $file OR d.choice CONTAINS $file OR d.rationale CONTAINS $file)
OPTIONAL MATCH (d)-[:SUPERSEDES]->(old:Decision)
RETURN d.id AS id, d.session_id AS session_id, d.subject AS subject, d.choice AS choice,
       d.rationale AS rationale, coalesce(d.alternatives, []) AS alternatives,
       d.confidence AS confidence, coalesce(d.files, []) AS files, d.at AS at,
       old.id AS supersedes, d.superseded_by AS superseded_by
ORDER BY d.at DESC, d.id DESC
LIMIT $limit
