// Creates the decision and supersedes the project's current decision on the same subject.
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $at
WITH p
OPTIONAL MATCH (prev:Decision {project: $project, subject_key: $subject_key})
WHERE prev.superseded_by IS NULL
WITH prev ORDER BY prev.at DESC LIMIT 1
CREATE (d:Decision {id: $id, project: $project, session_id: $session_id, subject: $subject,
                    subject_key: $subject_key, choice: $choice, rationale: $rationale,
                    alternatives: $alternatives, confidence: $confidence, files: $files, at: $at})
FOREACH (_ IN CASE WHEN prev IS NULL THEN [] ELSE [1] END |
  CREATE (d)-[:SUPERSEDES]->(prev)
  SET prev.superseded_by = $id)
RETURN prev.id AS superseded
