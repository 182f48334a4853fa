// A run's figures and outcome; creates the node when the run was not announced (the CLI).
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $now
MERGE (r:ExtractionRun {id: $id})
  ON CREATE SET r.project = $project, r.started_at = $started_at, r.mode = $mode,
                r.prompt_version = $prompt_version
SET r += $stats, r.status = $status, r.errors = $errors, r.finished_at = $now
