// Extends the claims $holder still holds on the sessions $ids (its heartbeat).
UNWIND $ids AS id
MATCH (s:Session {id: id})
WHERE s.extract_claim_holder = $holder
SET s.extract_claim_until = $until
RETURN count(s) AS renewed
