// BM25 over session search documents; $query already narrows to the project inside Lucene,
// the WHERE makes it exact.
CALL db.index.fulltext.queryNodes('session_search', $query, {limit: $k}) YIELD node, score
WHERE node.project = $project
RETURN node.id AS id, score
