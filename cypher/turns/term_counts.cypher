// A project's term statistics for project-local BM25: its turns (operations with a search
// text are counted by their sessions' lengths, plus memories and summaries) and, for each
// query word, how many of its turns hold it — counted by the full-text index itself (each
// $terms row carries its escaped Lucene query, narrowed to the project), at most $cap each.
CALL () {
  MATCH (s:Session {project: $project})
  RETURN sum(coalesce(s.last_seq, 0)) + count(s) AS docs
}
UNWIND $terms AS t
CALL (t) {
  CALL db.index.fulltext.queryNodes('turn_search', t.query, {limit: $cap}) YIELD node
  WHERE node.project = $project
  RETURN count(node) AS df
}
RETURN docs, t.word AS word, df
