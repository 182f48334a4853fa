MERGE (p:Project {id: $project})
  ON CREATE SET p.project = $project, p.created_at = $at
MERGE (m:Memory {id: $id})
  ON CREATE SET m.project = $project, m.session_id = $session_id, m.kind = $kind,
                m.content = $content, m.confidence = $confidence, m.tokens = $tokens, m.at = $at,
                m.search_text = $search_text, m.search_parts = $search_parts
WITH m
OPTIONAL MATCH (s:Session {id: $session_id, project: $project})
FOREACH (_ IN CASE WHEN s IS NULL THEN [] ELSE [1] END | MERGE (m)-[:ASSERTED_IN]->(s))
