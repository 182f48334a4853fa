// A task context's beliefs: the project's active ones as list.cypher reads them (evidence
// decayed to $now with half-life $half_life_ms), each with where its evidence lies — the
// sessions of the operations and decisions that inform it, and the files those operations
// touched — in the same pass over the evidence. The context ties beliefs to its sessions and
// files with these.
MATCH (b:Belief {project: $project, status: 'active'})
OPTIONAL MATCH (x)-[r:INFORMS]->(b)
WITH b,
     sum(CASE WHEN r.effect = 'supports' THEN 1 ELSE 0 END) AS supporting,
     sum(CASE WHEN r.effect = 'contradicts' THEN 1 ELSE 0 END) AS contradicting,
     sum(CASE WHEN r.effect = 'supports'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS support,
     sum(CASE WHEN r.effect = 'contradicts'
              THEN r.weight * 0.5 ^ (toFloat($now - r.at) / $half_life_ms) ELSE 0.0 END) AS contradict,
     collect(DISTINCT x.session_id) AS sessions,
     collect(CASE WHEN x:Operation THEN x END) AS operations
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
