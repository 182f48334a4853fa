// A close is not work: a session holding operations keeps its last activity at its last
// operation (a history closed late, or an idle session swept, is not made today's); an
// empty session's activity is its close.
MATCH (s:Session {id: $id, project: $project})
SET s.status = $status,
    s.summary = coalesce($summary, s.summary),
    s.next_steps = CASE WHEN size($next_steps) > 0 THEN $next_steps ELSE coalesce(s.next_steps, []) END,
    s.closed_at = $at,
    s.search_parts = CASE WHEN $search_text IS NULL THEN s.search_parts ELSE $search_parts END,
    s.search_text = coalesce($search_text, s.search_text),
    s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1,
    s.last_activity_at = CASE
      WHEN coalesce(s.last_seq, 0) = 0 AND $at > s.last_activity_at THEN $at
      ELSE s.last_activity_at END
