// Recall benchmark: a batch of sessions with their operation chains (PART_OF, FOLLOWS,
// TOUCHED) written straight to the graph. Each row of $sessions carries its ops in seq order.
// Sessions already present are skipped, so an interrupted or retried seed resumes.
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $now
WITH p
UNWIND $sessions AS s
WITH p, s
WHERE NOT EXISTS { MATCH (:Session {id: s.id}) }
CREATE (sn:Session {id: s.id, project: $project, agent: 'bench', task: s.task,
                    status: 'closed', summary: s.summary, next_steps: s.next_steps,
                    started_at: s.started_at, last_activity_at: s.last_activity_at,
                    closed_at: s.last_activity_at, last_seq: size(s.ops),
                    op_count: size(s.ops), tokens: 0})
CREATE (sn)-[:IN]->(p)
WITH sn, s
CALL (sn, s) {
  UNWIND s.ops AS row
  CREATE (o:Operation)
  SET o = row.props, o.project = $project, o.session_id = sn.id, o.created_at = row.props.at
  CREATE (o)-[:PART_OF]->(sn)
  WITH o, row
  CALL (o, row) {
    UNWIND row.touch AS path
    MERGE (f:File {project: $project, path: path})
    CREATE (o)-[:TOUCHED {mode: row.mode}]->(f)
  }
  RETURN collect(o) AS ops
}
FOREACH (i IN range(1, size(ops) - 1) |
  FOREACH (a IN [ops[i]] | FOREACH (b IN [ops[i - 1]] | CREATE (a)-[:FOLLOWS]->(b))))
