// Moves each session's turn cursors; the session stays pending while operations were
// appended beyond it (the writer holds the session's lock while it appends). Texts are
// followed by their own cursor and queue (`turns_texts_pending`); a pass without a model
// ($model empty) moves only those, so an instance with an embedding model still finds the
// session pending.
// A cursor moves only from where the pass read it (`row.from`) and while the session's resets
// are as the pass read them (`row.resets`): one reset meanwhile (vectors of another model
// found, the session queued again by another instance, a text made whole again) waits for the
// next pass, which reads it afresh.
// The pass's claim on each session (sessions/index_claim.cypher) ends with it, whether its cursor moved or not.
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
FOREACH (_ IN CASE WHEN s.index_claim_holder = $holder THEN [1] ELSE [] END |
  REMOVE s.index_claim_holder, s.index_claim_until)
WITH s, row
WHERE CASE WHEN $model = '' THEN coalesce(s.turns_text_seq, 0)
           WHEN s.turns_model = $model THEN coalesce(s.turns_seq, 0) ELSE 0 END = row.from
  AND coalesce(s.turns_resets, 0) = row.resets
SET s.turns_text_seq = CASE WHEN row.seq > coalesce(s.turns_text_seq, 0) THEN row.seq
                            ELSE s.turns_text_seq END
SET s.turns_texts_pending = coalesce(s.last_seq, 0) > s.turns_text_seq
FOREACH (_ IN CASE WHEN $model <> '' THEN [1] ELSE [] END |
  SET s.turns_seq = row.seq, s.turns_model = $model, s.turns_attempts = 0,
      s.turns_retry_at = null, s.turns_failed_by = null, s.turns_pending = coalesce(s.last_seq, 0) > row.seq)
