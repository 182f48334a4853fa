// `cairn-bench recall`'s baseline, its full-text half: the index's best $wide turns for the
// words, of which the project's first $k with the text a turn search reads.
CALL db.index.fulltext.queryNodes('turn_search', $query, {limit: $wide}) YIELD node, score
WHERE node.project = $project
RETURN node.id AS id, node.search_text AS text, score
LIMIT $k
