// Embedding a session's operations failed: try again later, backing off up to an hour; the
// pass's claim on it ends. Who failed is kept: after a first failure another replica may try
// at once (work.cypher).
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
FOREACH (_ IN CASE WHEN s.index_claim_holder = $holder THEN [1] ELSE [] END |
  REMOVE s.index_claim_holder, s.index_claim_until)
SET s.turns_attempts = coalesce(s.turns_attempts, 0) + 1, s.turns_failed_by = $holder
SET s.turns_retry_at = $now + toInteger(
      CASE WHEN s.turns_attempts > 10 THEN 3600000
           ELSE $base_delay_ms * 2 ^ (s.turns_attempts - 1) END)
SET s.turns_retry_at = CASE WHEN s.turns_retry_at > $now + 3600000
                            THEN $now + 3600000 ELSE s.turns_retry_at END
