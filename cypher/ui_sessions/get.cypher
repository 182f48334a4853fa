// A live web UI sign-in and the key behind it: none once it expired or the key was revoked.
MATCH (s:UiSession {hash: $hash})
WHERE s.expires_at > $now
MATCH (k:ApiKey {id: s.key_id, project: s.project})
WHERE k.revoked_at IS NULL
RETURN s.project AS project, s.key_id AS key_id, k.scope AS scope, s.csrf AS csrf,
       s.expires_at AS expires_at
