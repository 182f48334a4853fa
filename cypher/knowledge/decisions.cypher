// Decisions about each file: listing it, or naming its path in their text.
UNWIND $files AS path
MATCH (d:Decision {project: $project})
WHERE path IN coalesce(d.files, [])
   OR d.subject CONTAINS path OR d.choice CONTAINS path OR d.rationale CONTAINS path
RETURN path, d.id AS id, d.session_id AS session_id, d.subject AS subject, d.choice AS choice,
       d.rationale AS rationale, coalesce(d.alternatives, []) AS alternatives,
       d.confidence AS confidence, d.at AS at, d.superseded_by AS superseded_by
ORDER BY path, d.at DESC
