// Bench only: labelled synthetic sessions, written straight in (closed, dirty for indexing).
MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $now
WITH p
UNWIND $rows AS row
CREATE (s:Session {id: row.id, project: $project, task: row.task, summary: row.summary,
                   status: 'closed', started_at: row.at, closed_at: row.at,
                   last_activity_at: row.at, last_seq: 0, op_count: 0, tokens: 0,
                   next_steps: [], search_dirty: true, search_rev: 1})
CREATE (s)-[:IN]->(p)
