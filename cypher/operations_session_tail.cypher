MATCH (s:Session {id: $session_id})
SET s.last_seq = $last_seq, s.last_op_id = $last_op_id,
    s.op_count = coalesce(s.op_count, 0) + $added,
    s.tokens = coalesce(s.tokens, 0) + $tokens
