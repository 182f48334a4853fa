//! The test kit's app builder and assertion helpers (`crates/testkit`), as the tests name
//! them.

pub use cairn_testkit::app::{
    client_with_key, count, eventually, mint_key, neo4j_proxy, neo4j_uri, schema_once, settle,
    split, store, TestApp,
};
pub use cairn_testkit::embed::{app_with_embeddings, embeddings_answer, refusing_embeddings};
pub use cairn_testkit::Neo4jProxy;

/// A session of `app` in which the user asked how long refresh tokens live and the assistant
/// answered "… fourteen days …", then `steps` unrelated turns about the changelog. Returns
/// its id.
pub async fn refresh_tokens_session(app: &TestApp, steps: usize) -> String {
    let old = app.session().await;
    let mut ops = vec![
        serde_json::json!({"type": "message", "role": "user",
               "content": "how long should refresh tokens live before they expire?"}),
        serde_json::json!({"type": "message", "role": "assistant",
               "content": "Refresh tokens expire after fourteen days and rotate on every use."}),
    ];
    for i in 0..steps {
        ops.push(serde_json::json!({"type": "message", "role": "user",
                        "content": format!("step {i}: tidied the changelog wording")}));
    }
    app.ops_sync(&old, serde_json::json!(ops)).await;
    old
}

/// What `POST /v1/hooks/claude-code` answers a UserPromptSubmit of `prompt` in `session` with
/// (its `additionalContext`), if anything; asserts a 200.
pub async fn prompt_recall(app: &TestApp, session: &str, prompt: &str) -> Option<String> {
    let event = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": session,
                                   "cwd": "/tmp", "prompt": prompt});
    let route = format!("/v1/hooks/claude-code?project={}", app.project);
    let (status, reply) = app.post(&route, &event).await;
    assert_eq!(status, 200, "{reply}");
    reply["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_string)
}

/// Two projects' sessions queued for a background pass, for a test that projects take turns:
/// a big project's three newest (`b1`, `b2`, `b3`) and a small project's one, older (`s1`).
/// `flags` are the queue's properties (a Cypher map's entries). Returns (big, small).
pub async fn two_projects_queued(kind: &str, flags: &str) -> (String, String) {
    schema_once().await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (big, small) = (format!("{kind}-big-{run}"), format!("{kind}-small-{run}"));
    let now = cairn::graph::now_ms();
    let rows = serde_json::json!([
        {"project": big, "id": "b1", "active": now - 1_000},
        {"project": big, "id": "b2", "active": now - 2_000},
        {"project": big, "id": "b3", "active": now - 3_000},
        {"project": small, "id": "s1", "active": now - 60_000},
    ]);
    let create = format!(
        "UNWIND $rows AS r
         CREATE (:Session {{id: r.project + '-' + r.id, project: r.project, last_seq: 0,
                           last_activity_at: r.active, {flags}}})"
    );
    store()
        .run(neo4rs::query(&create).param("rows", cairn::graph::param(&rows).unwrap()))
        .await
        .expect("sessions");
    (big, small)
}

/// The order in which a queue's answer (`(project, session id)`, in its order) holds the
/// sessions of [`two_projects_queued`], by their short names; the two projects are purged.
pub async fn queue_order(big: &str, small: &str, answer: Vec<(String, String)>) -> Vec<String> {
    for p in [big, small] {
        cairn::graph::purge::project_now(&store(), p)
            .await
            .expect("purge");
    }
    answer
        .into_iter()
        .filter(|(p, _)| p == big || p == small)
        .map(|(_, id)| id.rsplit('-').next().unwrap_or_default().to_string())
        .collect()
}

/// How many operations writers running in the background have had acknowledged so far: a
/// fault test waits on this count, not on a timer, since a loaded machine acknowledges
/// fewer batches a second.
#[derive(Clone, Default)]
pub struct Acked(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Acked {
    pub fn add(&self, n: usize) {
        self.0.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn now(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (up to 60 s) until `more` operations beyond `from` are acknowledged; returns the
    /// count then.
    pub async fn more_than(&self, from: usize, more: usize, what: &str) -> usize {
        eventually(60, what, || async { self.now() >= from + more }).await;
        self.now()
    }
}
