// Files and patterns left with nothing pointing at them after a purge.
CALL {
  MATCH (f:File {project: $project})
  WHERE NOT (f)<-[:TOUCHED]-()
  DETACH DELETE f
}
CALL {
  MATCH (p:Pattern {project: $project})
  WHERE NOT (p)-[:EVIDENCED_BY]->()
  DETACH DELETE p
}
