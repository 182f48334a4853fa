// Signing out of the web UI.
MATCH (s:UiSession {hash: $hash})
DELETE s
