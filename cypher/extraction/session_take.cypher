// Claims the session for $holder until $until before the LLM sees it: only while it is not
// extracted with $version and no live claim of another holder is on it. The first SET takes
// the session's write lock before the claim is read, so racing runs get it one at a time.
MATCH (s:Session {id: $session_id, project: $project})
SET s.extract_claim_checked_at = $now
WITH s,
     NOT $version IN coalesce(s.extracted_versions, []) AS pending,
     s.extract_claim_holder IS NULL OR s.extract_claim_holder = $holder
       OR s.extract_claim_until < $now AS free
SET s.extract_claim_holder = CASE WHEN pending AND free THEN $holder ELSE s.extract_claim_holder END,
    s.extract_claim_until = CASE WHEN pending AND free THEN $until ELSE s.extract_claim_until END
RETURN pending AND free AS claimed
