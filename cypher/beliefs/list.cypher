// Beliefs of a project with their evidence, decayed to $now with half-life $half_life_ms.
MATCH (b:Belief {project: $project})
WHERE $status IS NULL OR b.status = $status
OPTIONAL MATCH (x)-[r:INFORMS]->(b)
WITH b,
     sum(CASE WHEN r.effect = 'supports' THEN 1 ELSE 0 END) AS supporting,
     sum(CASE WHEN r.effect = 'contradicts' THEN 1 ELSE 0 END) AS contradicting,
     sum(CASE WHEN r.effect = 'supports'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS support,
     sum(CASE WHEN r.effect = 'contradicts'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS contradict
RETURN b.id AS id, b.content AS content, b.category AS category, b.status AS status,
       b.prior AS prior, b.created_at AS created_at, b.updated_at AS updated_at,
       supporting, contradicting, support, contradict
ORDER BY b.created_at DESC
LIMIT $limit
