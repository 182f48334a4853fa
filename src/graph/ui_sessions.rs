//! Web UI sign-ins: a random cookie id stored only as its digest, with the project, the key
//! it was made with, a CSRF token and an expiry. A sign-in is found only while it has not
//! expired and its key is not revoked, so revoking a key ends its sign-ins at once, on every
//! replica.

use serde::Deserialize;

use super::{now_ms, statement, Store, StoreResult};

/// A live sign-in as read back, with the scope its key has now.
#[derive(Clone, Debug, Deserialize)]
pub struct UiSession {
    pub project: String,
    pub key_id: String,
    pub scope: String,
    pub csrf: String,
    pub expires_at: i64,
}

/// What a new sign-in stores.
pub struct NewUiSession<'a> {
    /// Digest of the cookie's id.
    pub hash: &'a str,
    pub project: &'a str,
    pub key_id: &'a str,
    pub csrf: &'a str,
    pub expires_at: i64,
}

/// Stores a sign-in (and drops the project's expired ones).
pub async fn create(store: &Store, s: &NewUiSession<'_>) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/ui_sessions/create.cypher"))
                .param("hash", s.hash)
                .param("project", s.project)
                .param("key_id", s.key_id)
                .param("csrf", s.csrf)
                .param("expires_at", s.expires_at)
                .param("now", now_ms()),
        )
        .await
}

/// The live sign-in with this digest: `None` when unknown, expired or its key revoked.
pub async fn get(store: &Store, hash: &str) -> StoreResult<Option<UiSession>> {
    store
        .fetch_one(
            statement(include_str!("../../cypher/ui_sessions/get.cypher"))
                .param("hash", hash)
                .param("now", now_ms()),
        )
        .await
}

/// Ends a sign-in.
pub async fn delete(store: &Store, hash: &str) -> StoreResult<()> {
    store
        .run(statement(include_str!("../../cypher/ui_sessions/delete.cypher")).param("hash", hash))
        .await
}
