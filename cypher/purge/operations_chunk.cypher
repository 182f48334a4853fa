// Deletes up to $limit operations of a project with their passages, so purging a large
// project is split into transactions Neo4j can hold in memory and finish within a query
// deadline.
MATCH (o:Operation {project: $project})
WITH o LIMIT $limit
CALL (o) {
  MATCH (p:Passage {operation_id: o.id})
  DELETE p
}
DETACH DELETE o
RETURN count(*) AS deleted
