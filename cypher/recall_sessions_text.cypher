// Sessions of the project whose task, summary or operations match $query (BM25 over the
// cairn_text index), best first.
CALL db.index.fulltext.queryNodes('cairn_text', $query, {limit: $scan}) YIELD node, score
WHERE node.project = $project AND (node:Session OR node:Operation OR node:Decision)
WITH CASE WHEN node:Session THEN node.id ELSE node.session_id END AS sid, score
WHERE sid IS NOT NULL
WITH sid, max(score) AS score
MATCH (p:Session {id: sid, project: $project})
RETURN p.id AS id, p.task AS task, p.status AS status, p.summary AS summary,
       p.llm_summary AS llm_summary, p.started_at AS started_at,
       p.last_activity_at AS last_activity_at, coalesce(p.op_count, 0) AS operation_count
ORDER BY score DESC
LIMIT $limit
