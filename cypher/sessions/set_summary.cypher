// Derived summaries for sessions that ended without one; a summary stored meanwhile wins.
UNWIND $rows AS r
MATCH (s:Session {id: r.id, project: r.project})
WHERE s.summary IS NULL
SET s.summary = r.summary,
    s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1
