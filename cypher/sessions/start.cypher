// Idempotent on the session id; never re-homes a session that belongs to another project.
// A child session (a subagent's) names its parent session and the operation that launched it;
// either may be stored before or after it: each side links what is already there when it
// arrives (children waiting for this session; the launching operation in operations_write).
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
SET s.parent = coalesce(s.parent, $parent),
    s.spawned_by = coalesce(s.spawned_by, $spawned_by),
    s.agent_type = coalesce(s.agent_type, $agent_type),
    s.task = coalesce(s.task, $task)
MERGE (s)-[:IN]->(p)
WITH s
OPTIONAL MATCH (prev:Session {id: $continues, project: $project})
FOREACH (_ IN CASE WHEN prev IS NULL OR prev = s THEN [] ELSE [1] END |
  MERGE (s)-[:CONTINUES]->(prev))
WITH s
OPTIONAL MATCH (parent:Session {id: coalesce(s.parent, ''), project: $project})
FOREACH (_ IN CASE WHEN parent IS NULL OR parent = s THEN [] ELSE [1] END |
  MERGE (s)-[:CHILD_OF]->(parent))
WITH s
OPTIONAL MATCH (launch:Operation {id: coalesce(s.spawned_by, ''), project: $project})
FOREACH (_ IN CASE WHEN launch IS NULL THEN [] ELSE [1] END |
  MERGE (s)-[:SPAWNED_BY]->(launch))
WITH s
CALL (s) {
  OPTIONAL MATCH (child:Session {parent: s.id, project: s.project})
  WHERE child <> s AND NOT (child)-[:CHILD_OF]->(s)
  FOREACH (_ IN CASE WHEN child IS NULL THEN [] ELSE [1] END |
    MERGE (child)-[:CHILD_OF]->(s))
}
RETURN s.id AS id
