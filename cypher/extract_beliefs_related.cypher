// Beliefs of the project matching $query (Lucene syntax, built from plain words), best first.
CALL db.index.fulltext.queryNodes('cairn_text', $query) YIELD node, score
WITH node AS b, score
WHERE b:Belief AND b.project = $project AND b.status <> 'rejected'
RETURN b.id AS id, b.content AS content, coalesce(b.conviction, 0.5) AS conviction,
       b.status AS status, score
ORDER BY score DESC
LIMIT $limit
