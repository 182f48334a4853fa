// A run as it starts (the HTTP route creates it before the job runs in the background).
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $now
CREATE (r:ExtractionRun {id: $id, project: $project, status: 'running', mode: $mode,
                         prompt_version: $prompt_version, started_at: $now})
