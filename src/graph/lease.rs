//! Leases in the graph: a `(:Lease {name})` node says which process (`holder`) may run a
//! background job that replicas share, and `until` when that right lapses unless renewed. A
//! holder that dies stops renewing, and another takes over once `until` has passed. Ticks make
//! scheduled work happen once: a lease released with its tick done is not taken again for it.

use serde::Deserialize;

use super::{now_ms, statement, Store, StoreResult};

/// What asking for a lease found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseState {
    /// The asker holds it now (taken or renewed).
    Held,
    /// Another live holder has it.
    Busy,
    /// The tick asked about was done already.
    Done,
}

#[derive(Debug, Deserialize)]
struct Row {
    state: String,
}

/// Takes or renews `name` for `holder` for `ttl_ms` from now; with `tick`, only while that
/// tick is not done.
pub async fn acquire(
    store: &Store,
    name: &str,
    holder: &str,
    ttl_ms: i64,
    tick: Option<i64>,
) -> StoreResult<LeaseState> {
    let now = now_ms();
    let row: Option<Row> = store
        .fetch_one(
            statement(include_str!("../../cypher/lease/acquire.cypher"))
                .param("name", name)
                .param("holder", holder)
                .param("now", now)
                .param("until", now + ttl_ms.max(1))
                .param("tick", tick),
        )
        .await?;
    Ok(match row.map(|r| r.state).as_deref() {
        Some("held") => LeaseState::Held,
        Some("done") => LeaseState::Done,
        _ => LeaseState::Busy,
    })
}

/// Lets go of `name` if `holder` has it, recording `tick` done; true when it was held.
pub async fn release(
    store: &Store,
    name: &str,
    holder: &str,
    tick: Option<i64>,
) -> StoreResult<bool> {
    #[derive(Deserialize)]
    struct Released {
        released: i64,
    }
    let row: Option<Released> = store
        .fetch_one(
            statement(include_str!("../../cypher/lease/release.cypher"))
                .param("name", name)
                .param("holder", holder)
                .param("tick", tick),
        )
        .await?;
    Ok(row.is_some_and(|r| r.released > 0))
}

/// This process's name as a lease or claim holder: host, process id and a random part, so a
/// restarted process on the same host is a new holder.
pub fn process_holder() -> &'static str {
    static HOLDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOLDER.get_or_init(|| {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "cairn".into());
        let random = uuid::Uuid::new_v4().simple().to_string();
        format!("{host}:{}:{}", std::process::id(), &random[..8])
    })
}
