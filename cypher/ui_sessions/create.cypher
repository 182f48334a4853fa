// A web UI sign-in: the digest of its cookie id, the key it was made with, its CSRF token.
// The project's expired sign-ins go at the same time.
CALL {
  MATCH (old:UiSession {project: $project})
  WHERE old.expires_at <= $now
  DELETE old
}
CREATE (:UiSession {hash: $hash, project: $project, key_id: $key_id, csrf: $csrf,
                    created_at: $now, expires_at: $expires_at})
