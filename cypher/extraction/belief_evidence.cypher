// Raw evidence of beliefs ($ids, or every belief of the project when null) for the
// conviction formula, which runs in Rust (src/domain/conviction.rs).
MATCH (b:Belief {project: $project})
WHERE $ids IS NULL OR b.id IN $ids
OPTIONAL MATCH (x)-[r:INFORMS]->(b)
RETURN b.id AS id, b.status AS status, coalesce(b.prior, 0.5) AS prior,
       b.created_at AS created_at,
       collect(CASE WHEN r IS NULL THEN NULL
               ELSE {effect: r.effect, weight: coalesce(r.weight, 1.0), at: coalesce(r.at, b.created_at)} END)
         AS evidence
