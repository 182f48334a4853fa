// Beliefs informed by the given sessions' operations or decisions (link 'session'), or by
// operations that touched one of the given files (link 'file').
CALL () {
  UNWIND $sessions AS sid
  MATCH (x:Operation {session_id: sid, project: $project})-[:INFORMS]->(b:Belief)
  RETURN b.id AS id, 'session' AS link
  UNION
  UNWIND $sessions AS sid
  MATCH (x:Decision {session_id: sid, project: $project})-[:INFORMS]->(b:Belief)
  RETURN b.id AS id, 'session' AS link
  UNION
  UNWIND $files AS path
  MATCH (f:File {project: $project, path: path})<-[:TOUCHED]-(:Operation)-[:INFORMS]->(b:Belief)
  RETURN b.id AS id, 'file' AS link
}
RETURN id, collect(DISTINCT link) AS links
