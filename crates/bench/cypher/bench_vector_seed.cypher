// Recall benchmark: vectors written straight to operations (with the model recorded and the
// signature, as the turn indexer would), then the sessions' turn cursors set to their end.
CALL () {
  UNWIND $rows AS row
  MATCH (o:Operation {id: row.id})
  SET o.search_text = coalesce(o.search_text, row.text)
  WITH o, row
  CALL db.create.setNodeVectorProperty(o, 'embedding', row.vector)
  SET o.embedding_model = $model, o.embedding_dim = $dim, o.embedding_sig = row.sig
}
UNWIND $sessions AS x
MATCH (s:Session {id: x.id, project: $project})
SET s.turns_seq = x.last_seq, s.turns_text_seq = x.last_seq, s.turns_model = $cursor,
    s.turns_pending = false
