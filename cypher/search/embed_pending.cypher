// Sessions whose search document has no embedding yet (or a stale one), skipping those
// whose last attempt failed until their retry time.
MATCH (s:Session)
WHERE s.embed_pending = true AND coalesce(s.embed_retry_at, 0) <= $now
  AND s.search_doc IS NOT NULL
WITH s ORDER BY coalesce(s.embed_attempts, 0), s.last_activity_at DESC
LIMIT $limit
RETURN s.id AS id, s.project AS project, s.search_doc AS doc, s.search_doc_hash AS hash
