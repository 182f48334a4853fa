// Memories and closed sessions written before turn search, without a search text yet, with
// what their text is made of (`fields`: a memory's kind as `type`, its content; a session's
// summary).
CALL () {
  MATCH (m:Memory) WHERE m.search_text IS NULL AND m.content IS NOT NULL
  RETURN 'memory' AS label, m.id AS id, {type: m.kind, content: m.content} AS fields,
         [] AS next_steps
  LIMIT $limit
  UNION ALL
  MATCH (s:Session) WHERE s.search_text IS NULL AND s.summary IS NOT NULL
  RETURN 'session' AS label, s.id AS id, {summary: s.summary} AS fields,
         coalesce(s.next_steps, []) AS next_steps
  LIMIT $limit
}
RETURN label, id, fields, next_steps
