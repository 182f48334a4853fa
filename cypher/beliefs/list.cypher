// Beliefs of a project with their evidence, decayed to $now with half-life $half_life_ms.
// With $places, also where each one's evidence lies: the sessions of the operations and
// decisions that inform it, and the files those operations touched (a task context ties
// beliefs to its sessions and files with these) — in the same pass over the evidence.
MATCH (b:Belief {project: $project})
WHERE $status IS NULL OR b.status = $status
OPTIONAL MATCH (x)-[r:INFORMS]->(b)
WITH b,
     sum(CASE WHEN r.effect = 'supports' THEN 1 ELSE 0 END) AS supporting,
     sum(CASE WHEN r.effect = 'contradicts' THEN 1 ELSE 0 END) AS contradicting,
     sum(CASE WHEN r.effect = 'supports'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS support,
     sum(CASE WHEN r.effect = 'contradicts'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS contradict,
     CASE WHEN $places THEN collect(DISTINCT x.session_id) ELSE [] END AS sessions,
     CASE WHEN $places THEN collect(CASE WHEN x:Operation THEN x END) ELSE [] END AS operations
ORDER BY b.created_at DESC
LIMIT $limit
RETURN b.id AS id, b.content AS content, b.category AS category, b.status AS status,
       b.prior AS prior, b.created_at AS created_at, b.updated_at AS updated_at,
       supporting, contradicting, support, contradict, sessions,
       COLLECT {
         UNWIND operations AS o
         MATCH (o)-[:TOUCHED]->(f:File)
         RETURN DISTINCT f.path
       } AS files
ORDER BY created_at DESC
