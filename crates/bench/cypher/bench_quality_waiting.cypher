// Recall quality while the index is behind: the sessions $sessions of $project, their
// operations' and passages' vectors and their documents' vectors, relabelled from the model
// $from to $to (marked as another model's, as after a switch of models, then back). Search
// compares only the configured model's vectors, and no indexer re-queues what is relabelled
// while it runs (its cursors are left as they are). How many sessions and operations moved.
UNWIND $sessions AS sid
MATCH (s:Session {id: sid, project: $project})
CALL (s) {
  OPTIONAL MATCH (s)<-[:PART_OF]-(o:Operation)
  WHERE o.embedding_model = $from
  SET o.embedding_model = $to
  RETURN count(o) AS operations
}
CALL (s) {
  OPTIONAL MATCH (p:Passage {session_id: s.id})
  WHERE p.project = $project AND p.embedding_model = $from
  SET p.embedding_model = $to
  RETURN count(p) AS passages
}
FOREACH (_ IN CASE WHEN s.embedding_model = $from THEN [1] ELSE [] END |
  SET s.embedding_model = $to)
RETURN count(s) AS sessions, sum(operations) AS operations, sum(passages) AS passages
