// Deletes a session and everything it owns: operations and their passages, its decisions and their options,
// memories asserted in it. Decisions it superseded become current again.
MATCH (s:Session {id: $id, project: $project})
OPTIONAL MATCH (d:Decision {session_id: $id})
OPTIONAL MATCH (d)-[:SUPERSEDES]->(older:Decision)
SET older.superseded_by = null
WITH s, collect(DISTINCT d) AS decisions
CALL (decisions) {
  UNWIND decisions AS d
  OPTIONAL MATCH (d)-[:CHOSE|REJECTED]->(opt:Option)
  DETACH DELETE opt
}
CALL (decisions) {
  UNWIND decisions AS d
  DETACH DELETE d
}
CALL (s) {
  MATCH (p:Passage {session_id: s.id})
  DELETE p
}
CALL (s) {
  MATCH (o:Operation {session_id: s.id})
  USING INDEX o:Operation(session_id, seq)
  WHERE o.seq >= 0
  DETACH DELETE o
}
CALL (s) {
  MATCH (m:Memory {session_id: s.id})
  DETACH DELETE m
}
DETACH DELETE s
RETURN 1 AS purged
