// Beliefs of the project matching $query (Lucene, narrowed to the project inside the index;
// the WHERE makes it exact), best first.
CALL db.index.fulltext.queryNodes('belief_text', $query) YIELD node, score
WITH node AS b, score
WHERE b.project = $project AND b.status <> 'rejected'
RETURN b.id AS id, b.content AS content, coalesce(b.conviction, 0.5) AS conviction,
       b.status AS status, score
ORDER BY score DESC
LIMIT $limit
