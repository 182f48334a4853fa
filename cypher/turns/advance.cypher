// Moves each session's turn cursors; the session stays pending while operations were
// appended beyond it (the writer holds the session's lock while it appends). Texts are
// followed by their own cursor; a pass without a model ($model empty) moves only that one,
// so an instance with an embedding model still finds the session pending.
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
SET s.turns_text_seq = CASE WHEN row.seq > coalesce(s.turns_text_seq, 0) THEN row.seq
                            ELSE s.turns_text_seq END
FOREACH (_ IN CASE WHEN $model <> '' THEN [1] ELSE [] END |
  SET s.turns_seq = row.seq, s.turns_model = $model, s.turns_attempts = 0,
      s.turns_retry_at = null, s.turns_pending = coalesce(s.last_seq, 0) > row.seq)
