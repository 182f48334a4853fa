// Decisions recorded in a session, oldest first, with what superseded what.
MATCH (d:Decision {session_id: $session_id, project: $project})
OPTIONAL MATCH (d)-[:SUPERSEDES]->(old:Decision)
RETURN d.id AS id, d.session_id AS session_id, d.subject AS subject, d.choice AS choice,
       d.rationale AS rationale, coalesce(d.alternatives, []) AS alternatives,
       d.confidence AS confidence, coalesce(d.files, []) AS files, d.at AS at,
       old.id AS supersedes, d.superseded_by AS superseded_by
ORDER BY d.at, d.id
