// Drops $holder's claim on the session (its analysis failed: another run may try it).
MATCH (s:Session {id: $session_id, project: $project})
WHERE s.extract_claim_holder = $holder
REMOVE s.extract_claim_holder, s.extract_claim_until
