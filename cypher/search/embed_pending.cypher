// Sessions whose search document has no embedding yet (or a stale one), skipping those
// whose last attempt failed until their retry time, unless only their first attempt failed
// and on another replica ($holder is not `embed_failed_by`): one replica that cannot reach
// its endpoint holds no document back from the others. Within a project, the least tried
// first, then the newest; projects take turns (each one's first, then each one's second, …),
// so one project's backlog (an import, a model switch) cannot hold up another's documents.
// A session another replica claimed (sessions/index_claim.cypher) is left to it while the claim
// lasts.
MATCH (s:Session)
WHERE s.embed_pending = true
  AND (coalesce(s.embed_retry_at, 0) <= $now
       OR (s.embed_attempts = 1 AND s.embed_failed_by <> $holder))
  AND s.search_doc IS NOT NULL
  AND (s.index_claim_holder IS NULL OR s.index_claim_holder = $holder
       OR s.index_claim_until <= $now)
WITH s ORDER BY coalesce(s.embed_attempts, 0), s.last_activity_at DESC
WITH s.project AS project, collect(s)[..$limit] AS line
UNWIND range(0, size(line) - 1) AS turn
WITH line[turn] AS s, turn
ORDER BY turn, coalesce(s.embed_attempts, 0), s.last_activity_at DESC
LIMIT $limit
RETURN s.id AS id, s.project AS project, s.search_doc AS doc, s.search_doc_hash AS hash
