// The project's most recently active top-level sessions, each with the files it touched
// (written first) and its child sessions (subagents), for the web UI's timeline. Walked
// newest first along the (project, last_activity_at) index (asked for both, it gives that
// order), not sorted from every session of the project.
MATCH (s:Session {project: $project})
WHERE s.last_activity_at IS NOT NULL AND s.parent IS NULL
WITH s ORDER BY s.project DESC, s.last_activity_at DESC LIMIT $limit
CALL (s) {
  OPTIONAL MATCH (s)<-[:PART_OF]-(:Operation)-[t:TOUCHED]->(f:File)
  WITH f.path AS path, max(CASE t.mode WHEN 'write' THEN 1 ELSE 0 END) AS written
  WHERE path IS NOT NULL
  WITH path, written ORDER BY written DESC, path LIMIT $files
  RETURN collect(path) AS files
}
CALL (s) {
  OPTIONAL MATCH (c:Session {project: $project})-[:CHILD_OF]->(s)
  WITH c ORDER BY c.started_at LIMIT $children
  RETURN collect(CASE WHEN c IS NULL THEN NULL
                 ELSE {id: c.id, agent_type: c.agent_type, task: c.task, summary: c.summary,
                       status: c.status, operations: coalesce(c.op_count, 0)} END) AS children
}
RETURN s.id AS id, s.agent AS agent, s.task AS task, s.status AS status,
       s.summary AS summary, s.started_at AS started_at,
       s.last_activity_at AS last_activity_at, coalesce(s.op_count, 0) AS operations,
       files, children
ORDER BY last_activity_at DESC
