// For each query word, how many of a project's turns hold it — counted by the full-text index
// itself (each $terms row carries its escaped Lucene query, narrowed to the project), at most
// $cap each.
UNWIND $terms AS t
CALL (t) {
  CALL db.index.fulltext.queryNodes('turn_search', t.query, {limit: $cap}) YIELD node
  WHERE node.project = $project
  RETURN count(node) AS df
}
RETURN t.word AS word, df
