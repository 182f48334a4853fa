// Read benchmarks: a few sessions whose seeded vectors carry the stub's bare name ($old) get
// the name cairn records ($model), their operations' vectors with them, and sessions seeded
// before cursors named the passage scheme get the cursor cairn records ($cursor); how many
// were done.
MATCH (s:Session {project: $project})
WHERE s.turns_model IN [$old, $model]
WITH s LIMIT $limit
CALL (s) {
  MATCH (s)<-[:PART_OF]-(o:Operation)
  WHERE o.embedding_model = $old
  SET o.embedding_model = $model
}
SET s.turns_model = $cursor, s.turns_pending = false
RETURN count(s) AS n
