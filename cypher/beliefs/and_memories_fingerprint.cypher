// What a project's active beliefs with their evidence, and its memories, look like, without
// reading them, in one statement.
//
// Beliefs: how many, when one was last created, updated, reviewed or re-weighed (a status
// change sets one of these, or changes the count); how much evidence they have (each one's
// degree, kept by Neo4j: no relationship is read) and how many times evidence was written to
// them (`evidence_writes`, counted on the belief by every statement that creates or sets an
// INFORMS). Evidence added or re-weighed raises the count of writes, evidence removed (a purge)
// lowers the degree: every change to them moves one of these.
//
// Memories: how many, the latest and the sum of their times, and their tokens in all.
// Memories are written once and only ever added or purged, so any change moves one of these.
CALL () {
  MATCH (b:Belief {project: $project, status: 'active'})
  RETURN {
    beliefs: count(b),
    changed: [coalesce(max(b.created_at), 0), coalesce(max(b.updated_at), 0),
              coalesce(max(b.reviewed_at), 0), coalesce(max(b.conviction_at), 0)],
    evidence: coalesce(sum(COUNT { (b)<-[:INFORMS]-() }), 0),
    writes: coalesce(sum(b.evidence_writes), 0)
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
