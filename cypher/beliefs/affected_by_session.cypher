// Beliefs informed by a session's operations or decisions, with how many pieces of evidence
// from the session reinforced or weakened each.
CALL () {
  MATCH (o:Operation {session_id: $session_id, project: $project})-[r:INFORMS]->(b:Belief)
  USING INDEX o:Operation(session_id, seq)
  WHERE o.seq >= 0
  RETURN b, r
  UNION ALL
  MATCH (d:Decision {session_id: $session_id, project: $project})-[r:INFORMS]->(b:Belief)
  RETURN b, r
}
WITH b,
     sum(CASE WHEN r.effect = 'supports' THEN 1 ELSE 0 END) AS reinforced,
     sum(CASE WHEN r.effect = 'contradicts' THEN 1 ELSE 0 END) AS weakened
RETURN b.id AS id, b.content AS content, b.status AS status, reinforced, weakened
ORDER BY reinforced + weakened DESC, id
