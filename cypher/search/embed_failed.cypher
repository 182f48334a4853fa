// An embedding attempt failed: try again later, backing off exponentially up to an hour;
// $holder's claim on each session ends. Who failed is kept: after a first failure another
// replica may try at once (embed_pending.cypher).
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
FOREACH (_ IN CASE WHEN s.index_claim_holder = $holder THEN [1] ELSE [] END |
  REMOVE s.index_claim_holder, s.index_claim_until)
SET s.embed_attempts = coalesce(s.embed_attempts, 0) + 1, s.embed_failed_by = $holder
SET s.embed_retry_at = $now + toInteger(
      CASE WHEN s.embed_attempts > 10 THEN 3600000
           ELSE $base_delay_ms * 2 ^ (s.embed_attempts - 1) END)
SET s.embed_retry_at = CASE WHEN s.embed_retry_at > $now + 3600000
                            THEN $now + 3600000 ELSE s.embed_retry_at END
