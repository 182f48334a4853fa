// One page of sessions (by id, after $after) and, of those whose search text (a closed
// session's summary and next steps) holds at least $from characters (it may have been cut at
// a shorter bound than today's: `cut`) or of all when $parts are made again, what the text is
// made of. `last` is the page's last id, null
// past the last session.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
WITH collect(s) AS page
RETURN CASE WHEN size(page) > 0 THEN page[-1].id END AS last, size(page) AS scanned,
       [s IN page WHERE s.search_text IS NOT NULL AND ($parts OR size(s.search_text) >= $from)
        | s {label: 'session', eid: elementId(s), .search_text, .search_parts,
             cut: size(s.search_text) >= $from, .summary,
             next_steps: coalesce(s.next_steps, [])}] AS rows
