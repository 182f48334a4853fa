// Beliefs informed by the given sessions' operations or decisions (link 'session'), or by
// operations that touched one of the given files (link 'file'). The file link starts from the
// project's beliefs: their evidence is small, a file's history is not.
CALL () {
  UNWIND $sessions AS sid
  MATCH (o:Operation {session_id: sid, project: $project})-[:INFORMS]->(b:Belief)
  USING INDEX o:Operation(session_id, seq)
  WHERE o.seq >= 0
  RETURN b.id AS id, 'session' AS link
  UNION
  UNWIND $sessions AS sid
  MATCH (x:Decision {session_id: sid, project: $project})-[:INFORMS]->(b:Belief)
  RETURN b.id AS id, 'session' AS link
  UNION
  MATCH (b:Belief {project: $project})<-[:INFORMS]-(:Operation)-[:TOUCHED]->(f:File)
  WHERE f.path IN $files
  RETURN b.id AS id, 'file' AS link
}
RETURN id, collect(DISTINCT link) AS links
