// Takes the session's write lock for the transaction (the SET), so seq stays gap-free even
// with several writers, and returns the chain's tail.
MATCH (s:Session {id: $session_id, project: $project})
SET s.last_activity_at = CASE WHEN $at > s.last_activity_at THEN $at ELSE s.last_activity_at END,
    s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1
RETURN coalesce(s.last_seq, 0) AS last_seq, s.last_op_id AS last_op_id
