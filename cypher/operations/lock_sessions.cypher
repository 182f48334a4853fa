// Takes each session's write lock for the transaction (the SET), so seq stays gap-free even
// with several writers, and returns each chain's tail. A session's first operations dated
// before its start (history imported by a client that did not state when the session began,
// so it began at the server's clock) date the session: its start is the first of them and
// its last activity the last, not the day of the import.
UNWIND $sessions AS x
MATCH (s:Session {id: x.id, project: x.project})
WITH s, x, coalesce(s.last_seq, 0) = 0 AND x.first < s.started_at AS dated_by_work
SET s.started_at = CASE WHEN dated_by_work THEN x.first ELSE s.started_at END,
    s.last_activity_at = CASE
      WHEN dated_by_work OR x.at > s.last_activity_at THEN x.at
      ELSE s.last_activity_at END,
    s.search_dirty = true, s.search_rev = coalesce(s.search_rev, 0) + 1,
    s.turns_pending = true, s.turns_texts_pending = true
RETURN s.id AS id, coalesce(s.last_seq, 0) AS last_seq, s.last_op_id AS last_op_id
