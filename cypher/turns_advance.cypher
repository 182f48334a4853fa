// Moves each session's turn cursor; the session stays pending while operations were
// appended beyond it (the writer holds the session's lock while it appends). A pass without
// a model ($model empty) that moved the cursor leaves operations without vectors behind it:
// the model is then cleared, so an embedding model re-walks the session.
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
SET s.turns_model = CASE WHEN $model <> '' THEN $model
                         WHEN row.seq > coalesce(s.turns_seq, 0) THEN ''
                         ELSE s.turns_model END
SET s.turns_seq = row.seq, s.turns_attempts = 0,
    s.turns_retry_at = null, s.turns_pending = coalesce(s.last_seq, 0) > row.seq
