// What a project's active beliefs and their evidence look like, without reading them: how
// many beliefs, when one was last created, updated, reviewed or re-weighed (a status change
// sets one of these, or changes the count), and their evidence's count, supporting share,
// total weight (in millionths) and latest time. Every write to them changes one of these.
MATCH (b:Belief {project: $project, status: 'active'})
OPTIONAL MATCH (b)<-[r:INFORMS]-()
RETURN count(DISTINCT b) AS beliefs,
       [coalesce(max(b.created_at), 0), coalesce(max(b.updated_at), 0),
        coalesce(max(b.reviewed_at), 0), coalesce(max(b.conviction_at), 0)] AS changed,
       count(r) AS evidence,
       count(CASE WHEN r.effect = 'supports' THEN 1 END) AS supporting,
       coalesce(sum(toInteger(round(r.weight * 1000000))), 0) AS weight,
       coalesce(max(r.at), 0) AS last
