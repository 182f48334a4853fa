// Takes each session's write lock for the transaction (the SET), so seq stays gap-free even
// with several writers, and returns each chain's tail.
UNWIND $sessions AS x
MATCH (s:Session {id: x.id, project: x.project})
SET s.last_activity_at = CASE WHEN x.at > s.last_activity_at THEN x.at ELSE s.last_activity_at END,
    s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1,
    s.turns_pending = true
RETURN s.id AS id, coalesce(s.last_seq, 0) AS last_seq, s.last_op_id AS last_op_id
