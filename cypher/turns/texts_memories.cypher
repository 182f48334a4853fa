// One page of memories (by id, after $after) and, of those whose search text holds at least
// $from characters (it may have been cut at a shorter bound than today's), what the text is
// made of. `last` is the page's last id, null past the last memory.
MATCH (m:Memory)
WHERE m.id > $after
WITH m ORDER BY m.id LIMIT $page
WITH collect(m) AS page
RETURN CASE WHEN size(page) > 0 THEN page[-1].id END AS last, size(page) AS scanned,
       [m IN page WHERE size(m.search_text) >= $from
        | m {label: 'memory', eid: elementId(m), .search_text, type: m.kind, .content}] AS rows
