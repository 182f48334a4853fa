// Active beliefs informed by operations on each file, directly or through a pattern.
UNWIND $files AS path
MATCH (:File {project: $project, path: path})<-[:TOUCHED]-(o:Operation)
CALL (o) {
  MATCH (o)-[:INFORMS]->(b:Belief {status: 'active'})
  RETURN b
  UNION
  MATCH (p:Pattern)-[:EVIDENCED_BY]->(o)
  MATCH (p)-[:INFORMS]->(b:Belief {status: 'active'})
  RETURN b
}
RETURN path, b.id AS id, count(*) AS evidence
ORDER BY path, evidence DESC
