//! API keys (stored hashed) and the audit trail of admin actions.

use serde::{Deserialize, Serialize};

use super::{now_ms, statement, Store, StoreResult};

#[derive(Debug, Clone, Deserialize)]
pub struct StoredKey {
    pub project: String,
    pub scope: String,
    pub hash: String,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, poem_openapi::Object)]
pub struct KeyInfo {
    pub id: String,
    pub project: String,
    pub scope: String,
    pub label: Option<String>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, poem_openapi::Object)]
pub struct AuditEvent {
    pub id: String,
    pub action: String,
    pub actor: Option<String>,
    pub key_id: Option<String>,
    pub detail: Option<String>,
    pub at: i64,
}

pub struct NewKey<'a> {
    pub id: &'a str,
    pub project: &'a str,
    pub scope: &'a str,
    pub hash: &'a str,
    pub label: Option<&'a str>,
    pub actor: &'a str,
}

pub async fn create(store: &Store, k: &NewKey<'_>) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/keys/create.cypher"))
                .param("id", k.id)
                .param("project", k.project)
                .param("scope", k.scope)
                .param("hash", k.hash)
                .param("label", k.label)
                .param("actor", k.actor)
                .param("audit_id", uuid::Uuid::now_v7().to_string())
                .param("at", now_ms()),
        )
        .await
}

pub async fn get(store: &Store, id: &str) -> StoreResult<Option<StoredKey>> {
    store
        .fetch_one(statement(include_str!("../../cypher/keys/get.cypher")).param("id", id))
        .await
}

pub async fn list(store: &Store, project: &str) -> StoreResult<Vec<KeyInfo>> {
    store
        .fetch(statement(include_str!("../../cypher/keys/list.cypher")).param("project", project))
        .await
}

/// Revokes a key of `project`; false when there is no such active key.
pub async fn revoke(store: &Store, project: &str, id: &str, actor: &str) -> StoreResult<bool> {
    #[derive(Deserialize)]
    struct Row {
        #[allow(dead_code)]
        id: String,
    }
    let rows: Vec<Row> = store
        .fetch(
            statement(include_str!("../../cypher/keys/revoke.cypher"))
                .param("id", id)
                .param("project", project)
                .param("actor", actor)
                .param("audit_id", uuid::Uuid::now_v7().to_string())
                .param("at", now_ms()),
        )
        .await?;
    Ok(!rows.is_empty())
}

/// Records an admin action (project purged, …).
pub async fn audit(
    store: &Store,
    project: &str,
    action: &str,
    actor: &str,
    detail: Option<&str>,
) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/keys/audit_record.cypher"))
                .param("id", uuid::Uuid::now_v7().to_string())
                .param("project", project)
                .param("action", action)
                .param("actor", actor)
                .param("detail", detail)
                .param("at", now_ms()),
        )
        .await
}

pub async fn audit_trail(store: &Store, project: &str, limit: i64) -> StoreResult<Vec<AuditEvent>> {
    store
        .fetch(
            statement(include_str!("../../cypher/keys/audit_list.cypher"))
                .param("project", project)
                .param("limit", limit),
        )
        .await
}
