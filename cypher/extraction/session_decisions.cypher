// The session's decisions, the operation recording each, and the project's other decisions on
// the same subject.
MATCH (d:Decision {session_id: $session_id, project: $project})
OPTIONAL MATCH (o:Operation)-[:RECORDS]->(d)
OPTIONAL MATCH (other:Decision {project: $project, subject_key: d.subject_key})
WHERE other.id <> d.id
RETURN d.id AS id, d.subject AS subject, d.choice AS choice, o.id AS operation_id,
       collect(DISTINCT other.choice) AS other_choices, count(DISTINCT other) AS others,
       d.at AS at
ORDER BY at
