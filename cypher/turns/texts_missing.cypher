// Memories and closed sessions written before turn search, without a search text yet.
CALL () {
  MATCH (m:Memory) WHERE m.search_text IS NULL AND m.content IS NOT NULL
  RETURN 'memory' AS label, m.id AS id, m.kind AS kind, m.content AS content,
         null AS summary, [] AS next_steps
  LIMIT $limit
  UNION ALL
  MATCH (s:Session) WHERE s.search_text IS NULL AND s.summary IS NOT NULL
  RETURN 'session' AS label, s.id AS id, null AS kind, null AS content,
         s.summary AS summary, coalesce(s.next_steps, []) AS next_steps
  LIMIT $limit
}
RETURN label, id, kind, content, summary, next_steps
