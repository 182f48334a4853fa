// Claims the sessions of an indexer pass ($rows: id, project) for $holder until $until, each
// only while no live claim of another holder is on it, and returns those it holds: replicas
// with one model, reading one queue, embed each session's turns (a turn-index pass) and its
// search document (an embedding pass of the search index) once. The first SET takes the
// session's write lock before its claim is read, so racing replicas get it one at a time (it
// writes nothing the claim reads: a value read before the lock would be stale).
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
SET s.index_claim_asked_at = $now
WITH s
WHERE s.index_claim_holder IS NULL OR s.index_claim_holder = $holder
   OR s.index_claim_until <= $now
SET s.index_claim_holder = $holder, s.index_claim_until = $until
RETURN s.id AS id
