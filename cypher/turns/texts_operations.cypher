// One page of operations (by id, after $after) and, of those whose search text holds at least
// $from characters (it may have been cut at a shorter bound than today's: `cut`) or of all
// when $parts are made again, what the text is made of: the operation's own fields, or the
// decision it records. `last` is the page's last id, null past the last operation.
MATCH (o:Operation)
WHERE o.id > $after
WITH o ORDER BY o.id LIMIT $page
WITH collect(o) AS page
CALL (page) {
  UNWIND page AS o
  WITH o WHERE o.search_text IS NOT NULL AND ($parts OR size(o.search_text) >= $from)
  OPTIONAL MATCH (o)-[:RECORDS]->(d:Decision)
  RETURN collect(o {label: 'operation', eid: elementId(o), .search_text, .search_parts,
                    cut: size(o.search_text) >= $from, .type, .role,
                    .summary, .content, .target, .tool, .rationale,
                    context: CASE WHEN o.type = 'tool_call' THEN o.context END,
                    decision: d {.subject, .choice, .rationale, .alternatives}}) AS rows
}
RETURN CASE WHEN size(page) > 0 THEN page[-1].id END AS last, size(page) AS scanned, rows
