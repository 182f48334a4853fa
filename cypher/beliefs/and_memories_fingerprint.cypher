// What a project's active beliefs with their evidence, and its memories, look like, without
// reading them, in one statement.
//
// Beliefs: how many, when one was last created, updated, reviewed or re-weighed (a status
// change sets one of these, or changes the count), and their evidence's count, supporting
// share, total weight (in millionths) and latest time. Every write to them changes one of
// these.
//
// Memories: how many, the latest and the sum of their times, and their tokens in all.
// Memories are written once and only ever added or purged, so any change moves one of these.
CALL () {
  MATCH (b:Belief {project: $project, status: 'active'})
  OPTIONAL MATCH (b)<-[r:INFORMS]-()
  RETURN {
    beliefs: count(DISTINCT b),
    changed: [coalesce(max(b.created_at), 0), coalesce(max(b.updated_at), 0),
              coalesce(max(b.reviewed_at), 0), coalesce(max(b.conviction_at), 0)],
    evidence: count(r),
    supporting: count(CASE WHEN r.effect = 'supports' THEN 1 END),
    weight: coalesce(sum(toInteger(round(r.weight * 1000000))), 0),
    last: coalesce(max(r.at), 0)
  } AS beliefs
}
CALL () {
  MATCH (m:Memory {project: $project})
  RETURN {
    memories: count(m), last: coalesce(max(m.at), 0),
    at_sum: coalesce(sum(m.at), 0), tokens: coalesce(sum(m.tokens), 0)
  } AS memories
}
RETURN beliefs, memories
