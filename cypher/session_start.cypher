// Idempotent on the session id; never re-homes a session that belongs to another project.
OPTIONAL MATCH (existing:Session {id: $id})
WITH existing
WHERE existing IS NULL OR existing.project = $project
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $at
MERGE (s:Session {id: $id})
  ON CREATE SET s.project = $project, s.agent = $agent, s.task = $task, s.cwd = $cwd,
                s.status = 'active', s.started_at = $at, s.last_activity_at = $at,
                s.last_seq = 0, s.op_count = 0, s.tokens = 0,
                s.search_dirty = true, s.search_rev = 1
MERGE (s)-[:IN]->(p)
WITH s
OPTIONAL MATCH (prev:Session {id: $continues, project: $project})
FOREACH (_ IN CASE WHEN prev IS NULL OR prev = s THEN [] ELSE [1] END |
  MERGE (s)-[:CONTINUES]->(prev))
RETURN s.id AS id
