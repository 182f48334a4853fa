// Patterns (mined candidates and LLM findings) with the operations that evidence them.
UNWIND $rows AS row
MERGE (p:Pattern {id: row.id})
  ON CREATE SET p.project = $project, p.created_at = $now, p.kind = row.kind,
                p.source = row.source, p.status = row.status
SET p.description = row.description, p.confidence = row.confidence,
    p.evidence_key = row.evidence_key, p.category = row.category,
    p.prompt_version = row.prompt_version, p.run_id = row.run_id,
    p.session_ids = CASE WHEN row.session_id IN coalesce(p.session_ids, []) THEN p.session_ids
                         ELSE coalesce(p.session_ids, []) + row.session_id END,
    p.support = CASE WHEN coalesce(p.support, 0) > row.support THEN p.support ELSE row.support END,
    p.updated_at = $now
WITH p, row
UNWIND row.evidence AS op_id
MATCH (o:Operation {id: op_id})
WHERE o.project = $project
MERGE (p)-[:EVIDENCED_BY]->(o)
