// One page of memories (by id, after $after) and, of those whose search text holds at least
// $from characters (it may have been cut at a shorter bound than today's: `cut`) or of all
// when $parts are made again, what the text is made of. `last` is the page's last id, null past the last memory.
MATCH (m:Memory)
WHERE m.id > $after
WITH m ORDER BY m.id LIMIT $page
WITH collect(m) AS page
RETURN CASE WHEN size(page) > 0 THEN page[-1].id END AS last, size(page) AS scanned,
       [m IN page WHERE m.search_text IS NOT NULL AND ($parts OR size(m.search_text) >= $from)
        | m {label: 'memory', eid: elementId(m), .search_text, .search_parts,
             cut: size(m.search_text) >= $from, type: m.kind, .content}] AS rows
