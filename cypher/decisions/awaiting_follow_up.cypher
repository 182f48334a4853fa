// Decisions of a session still in force whose files have not been written since.
MATCH (d:Decision {project: $project, session_id: $session_id})
WHERE d.superseded_by IS NULL AND size(coalesce(d.files, [])) > 0
  AND NOT EXISTS {
    MATCH (o:Operation {project: $project})-[:TOUCHED {mode: 'write'}]->(f:File {project: $project})
    WHERE f.path IN d.files AND o.at >= d.at
  }
RETURN d.id AS id, d.subject AS subject, d.choice AS choice, d.files AS files
ORDER BY d.at
LIMIT 10
