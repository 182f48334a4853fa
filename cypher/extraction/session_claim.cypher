// Marks the session extracted with $version and drops any claim on it; `done` says it
// already was (another run got it).
MATCH (s:Session {id: $session_id, project: $project})
WITH s, $version IN coalesce(s.extracted_versions, []) AS done
SET s.extracted_versions = CASE WHEN done THEN s.extracted_versions
                                ELSE coalesce(s.extracted_versions, []) + $version END,
    s.extracted_at = CASE WHEN done THEN s.extracted_at ELSE $now END,
    s.extract_claim_holder = null, s.extract_claim_until = null
RETURN done
