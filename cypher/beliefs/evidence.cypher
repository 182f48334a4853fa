// One belief with every piece of evidence informing it: what it is (operation, pattern,
// decision), its session, its text, effect, weight and when it was recorded.
MATCH (b:Belief {id: $id, project: $project})
OPTIONAL MATCH (x)-[r:INFORMS]->(b)
WITH b, x, r ORDER BY coalesce(r.at, b.created_at)
RETURN b.id AS id, b.content AS content, b.category AS category, b.status AS status,
       coalesce(b.prior, 0.5) AS prior, b.created_at AS created_at,
       collect(CASE WHEN r IS NULL THEN NULL ELSE {
         effect: r.effect, weight: coalesce(r.weight, 1.0), at: coalesce(r.at, b.created_at),
         kind: CASE WHEN x:Operation THEN 'operation' WHEN x:Pattern THEN 'pattern'
                    WHEN x:Decision THEN 'decision' ELSE 'other' END,
         source: x.id, session_id: coalesce(x.session_id, head(coalesce(x.session_ids, []))),
         seq: x.seq,
         text: coalesce(x.summary, x.description, x.subject, '')
       } END) AS evidence
