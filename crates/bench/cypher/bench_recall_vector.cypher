// `cairn-bench recall`'s baseline, its vector half: the index's $k nearest operations, those
// of the project with the text a turn search reads.
CALL db.index.vector.queryNodes('operation_embedding', $k, $vector) YIELD node, score
WHERE node.project = $project
RETURN node.id AS id, node.search_text AS text, score
