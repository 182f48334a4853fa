// Around one session: the sessions continuing it, its parent, and which of its operations
// were triggered by which (by seq when both are its own).
MATCH (s:Session {id: $session_id, project: $project})
CALL (s) {
  OPTIONAL MATCH (next:Session {project: $project})-[:CONTINUES]->(s)
  RETURN collect(next.id) AS continued_by
}
CALL (s) {
  OPTIONAL MATCH (s)<-[:PART_OF]-(a:Operation)-[:TRIGGERED_BY]->(b:Operation)
  RETURN collect(CASE WHEN a IS NULL THEN NULL
                 ELSE {seq: a.seq, by_id: b.id, by_seq: b.seq, by_session: b.session_id} END)
         AS triggers
}
RETURN continued_by, s.parent AS parent, triggers
