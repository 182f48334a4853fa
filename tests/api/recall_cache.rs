//! Cached session logs against the real Neo4j: a cached log follows what is appended, never
//! outlives a purge, and context built from cached logs is the context built from the graph.

use serde_json::{json, Value};

use crate::helpers::TestApp;
use crate::recall::start;

async fn reconstruct(app: &TestApp, sid: &str) -> Value {
    let (s, b) = app
        .get(&format!(
            "/v1/sessions/{sid}/reconstruction?max_operations=5000"
        ))
        .await;
    assert_eq!(s, 200, "{b}");
    b
}

fn seqs(r: &Value) -> Vec<i64> {
    r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["seq"].as_i64().unwrap())
        .collect()
}

fn summaries(r: &Value) -> Vec<String> {
    r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["summary"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_cached_log_follows_appends_and_never_outlives_a_purge() {
    let app = TestApp::spawn().await;
    let sid = start(&app, "cache me", None).await;
    app.ops_sync(
        &sid,
        json!([
            {"type": "read", "summary": "first read", "files_read": ["a.rs"]},
            {"type": "write", "summary": "first write", "files_modified": ["a.rs"]},
        ]),
    )
    .await;
    let first = reconstruct(&app, &sid).await;
    assert_eq!(seqs(&first), vec![1, 2]);
    // The second read comes from the cache and must still see what is appended after it.
    app.ops_sync(
        &sid,
        json!([{"type": "tool_call", "tool": "Bash", "summary": "then ran the tests"}]),
    )
    .await;
    let second = reconstruct(&app, &sid).await;
    assert_eq!(seqs(&second), vec![1, 2, 3]);
    assert_eq!(second["operations_total"], 3);
    assert_eq!(summaries(&second)[2], "then ran the tests");

    // Purged and started again under the same id: only the new operations.
    let (s, b) = app
        .delete(&format!("/v1/sessions/{sid}?project={}", app.project))
        .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "session_id": sid, "agent": "test", "task": "again"}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    app.ops_sync(
        &sid,
        json!([
            {"type": "read", "summary": "reborn read"},
            {"type": "read", "summary": "reborn second read"},
            {"type": "read", "summary": "reborn third read"},
        ]),
    )
    .await;
    let reborn = reconstruct(&app, &sid).await;
    assert_eq!(
        summaries(&reborn),
        vec!["reborn read", "reborn second read", "reborn third read"]
    );
    app.stop().await;
}

/// A chain whose newest session holds more operations than context reads whole, so the first
/// context pages the history and queries the files; reconstructions then cache both logs and
/// the second context is built from them alone.
#[tokio::test]
async fn context_from_cached_logs_is_context_from_the_graph() {
    let app = TestApp::spawn().await;
    let older = start(&app, "parser groundwork", None).await;
    app.ops_sync(
        &older,
        json!([
            {"type": "read", "summary": "read the grammar", "files_read": ["grammar.md", "src/parser.rs"]},
            {"type": "write", "summary": "wrote the parser", "files_modified": ["src/parser.rs"]},
            {"type": "write", "summary": "wrote the docs", "files_modified": ["docs/parser.md"]},
        ]),
    )
    .await;
    let newer = start(&app, "parser follow-up", Some(&older)).await;
    let files = [
        "src/parser.rs",
        "src/lexer.rs",
        "tests/parser.rs",
        "README.md",
    ];
    for batch in 0..6 {
        let ops: Vec<Value> = (0..1000)
            .map(|i| {
                let n = batch * 1000 + i;
                match n % 3 {
                    0 => json!({"type": "read", "summary": format!("read step {n}"), "files_read": [files[n % 4]]}),
                    1 => json!({"type": "write", "summary": format!("wrote step {n}"), "files_modified": [files[(n + 1) % 4], format!("gen/out{}.rs", n % 7)]}),
                    _ => json!({"type": "tool_call", "tool": "Bash", "summary": format!("ran step {n}")}),
                }
            })
            .collect();
        app.ops_sync(&newer, json!(ops)).await;
    }
    let body = json!({"project": app.project, "session_id": newer, "budget_tokens": 6000});
    let (s, from_graph) = app.post("/v1/context", &body).await;
    assert_eq!(s, 200, "{from_graph}");
    assert_eq!(reconstruct(&app, &older).await["operations_total"], 3);
    assert_eq!(reconstruct(&app, &newer).await["operations_total"], 6000);
    let (s, from_logs) = app.post("/v1/context", &body).await;
    assert_eq!(s, 200, "{from_logs}");

    assert_eq!(from_logs["text"], from_graph["text"]);
    assert_eq!(from_logs["sections"], from_graph["sections"]);
    assert_eq!(from_logs["warnings"], from_graph["warnings"]);
    let text = from_logs["text"].as_str().unwrap();
    assert!(text.contains("docs/parser.md"), "{text}");
    assert!(text.contains("ran step 5999"), "{text}");
    app.stop().await;
}

/// A new active belief of the app's project; its id.
async fn belief(app: &TestApp, content: &str) -> String {
    let (s, b) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": content, "conviction": 0.9}),
        )
        .await;
    assert!(s == 200 || s == 201, "{s} {b}");
    b["id"].as_str().unwrap().to_string()
}

/// The text of a task's context at 4,000 tokens.
async fn task_context(app: &TestApp, task: &str) -> String {
    let (s, r) = app
        .post(
            "/v1/context",
            &json!({"project": app.project, "budget_tokens": 4000, "task": task}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    r["text"].as_str().unwrap().to_string()
}

/// Records a lesson learnt in `session`.
async fn remember(app: &TestApp, session: &str, content: &str) {
    let (s, b) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": session, "kind": "lesson",
                    "content": content, "confidence": 0.9}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
}

/// The text of a session's context at 4,000 tokens.
async fn session_context(app: &TestApp, sid: &str) -> String {
    let (s, r) = app
        .post(
            "/v1/context",
            &json!({"project": app.project, "session_id": sid, "budget_tokens": 4000}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    r["text"].as_str().unwrap().to_string()
}

/// Beliefs reach a context through their evidence alone (no shared words): evidence from a
/// session in scope, or from an operation elsewhere that touched one of the scope's files.
#[tokio::test]
async fn context_links_beliefs_through_sessions_and_files() {
    let app = TestApp::spawn().await;
    let by_session = belief(&app, "mondays are slow").await;
    let by_file = belief(&app, "tuesdays are quick").await;
    let unlinked = belief(&app, "wednesdays are odd").await;
    assert!(!unlinked.is_empty());
    let elsewhere = start(&app, "some other work", None).await;
    app.ops_sync(
        &elsewhere,
        json!([{"type": "write", "summary": "edited the shared module", "files_modified": ["src/shared.rs"],
                "informs_belief": by_file}]),
    )
    .await;
    let sid = start(&app, "the work in scope", None).await;
    app.ops_sync(
        &sid,
        json!([
            {"type": "read", "summary": "read the shared module", "files_read": ["src/shared.rs"]},
            {"type": "tool_call", "tool": "Bash", "summary": "timed the week", "informs_belief": by_session},
        ]),
    )
    .await;
    let text = session_context(&app, &sid).await;
    assert!(text.contains("mondays are slow"), "{text}");
    assert!(text.contains("tuesdays are quick"), "{text}");
    assert!(!text.contains("wednesdays"), "{text}");
    assert!(
        text.find("mondays").unwrap() < text.find("tuesdays").unwrap(),
        "session evidence ranks above file evidence: {text}"
    );
    app.stop().await;
}

/// A project's beliefs are remembered between contexts only while they stay as they were:
/// new evidence and a review show in the very next context.
#[tokio::test]
async fn context_sees_belief_changes_at_once() {
    let app = TestApp::spawn().await;
    let ids = [
        belief(&app, "fridays are calm").await,
        belief(&app, "saturdays are loud").await,
    ];
    let sid = start(&app, "the week's work", None).await;
    app.ops_sync(
        &sid,
        json!([{"type": "tool_call", "tool": "Bash", "summary": "timed friday", "informs_belief": ids[0]}]),
    )
    .await;
    let context = || session_context(&app, &sid);
    let text = context().await;
    assert!(text.contains("fridays are calm"), "{text}");
    assert!(!text.contains("saturdays"), "{text}");
    // Evidence captured in the session ties the other belief in.
    app.ops_sync(
        &sid,
        json!([{"type": "tool_call", "tool": "Bash", "summary": "timed saturday", "informs_belief": ids[1]}]),
    )
    .await;
    let text = context().await;
    assert!(text.contains("saturdays are loud"), "{text}");
    // A rejected belief leaves the context.
    let (s, b) = app
        .post(
            &format!("/v1/beliefs/{}/reject?project={}", ids[0], app.project),
            &json!({}),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let text = context().await;
    assert!(!text.contains("fridays"), "{text}");
    assert!(text.contains("saturdays are loud"), "{text}");
    app.stop().await;
}

/// Evidence removed shows in the very next context, even when evidence added meanwhile leaves
/// the belief with as much as it had: the remembered beliefs' fingerprint counts writes of
/// evidence as well as evidence held.
#[tokio::test]
async fn context_sees_evidence_swapped_at_once() {
    let app = TestApp::spawn().await;
    let id = belief(&app, "sundays are for refactoring").await;
    let tied = start(&app, "edited the shared module", None).await;
    app.ops_sync(
        &tied,
        json!([{"type": "write", "summary": "edited the shared module", "files_modified": ["src/shared.rs"],
                "informs_belief": id}]),
    )
    .await;
    let sid = start(&app, "the work in scope", None).await;
    app.ops_sync(
        &sid,
        json!([{"type": "read", "summary": "read the shared module", "files_read": ["src/shared.rs"]}]),
    )
    .await;
    let text = session_context(&app, &sid).await;
    assert!(text.contains("sundays are for refactoring"), "{text}");
    // New evidence elsewhere, then the evidence that tied the belief in purged: as many pieces
    // of evidence as before, none of them in the scope's sessions or files.
    let untied = start(&app, "unrelated chores", None).await;
    app.ops_sync(
        &untied,
        json!([{"type": "tool_call", "tool": "Bash", "summary": "swept the floor", "informs_belief": id}]),
    )
    .await;
    let (s, b) = app
        .delete(&format!("/v1/sessions/{tied}?project={}", app.project))
        .await;
    assert!(s == 200 || s == 204, "{s} {b}");
    let text = session_context(&app, &sid).await;
    assert!(!text.contains("sundays"), "{text}");
    app.stop().await;
}

/// Memories are remembered between contexts while their fingerprint holds: one added, and one
/// purged with its session, show in the very next context.
#[tokio::test]
async fn context_sees_memory_changes_at_once() {
    let app = TestApp::spawn().await;
    let sid = start(&app, "the week's work", None).await;
    let other = start(&app, "an aside", None).await;
    // A task naming both, so each memory is relevant whichever session holds it.
    let context = || {
        task_context(
            &app,
            "what do we deploy on fridays, which keys rotate on saturdays",
        )
    };
    remember(&app, &sid, "fridays deploy nothing").await;
    let text = context().await;
    assert!(text.contains("fridays deploy nothing"), "{text}");
    remember(&app, &other, "saturdays rotate the keys").await;
    let text = context().await;
    assert!(text.contains("saturdays rotate the keys"), "{text}");
    // Purging the other session takes its memory with it.
    let (s, b) = app
        .delete(&format!("/v1/sessions/{other}?project={}", app.project))
        .await;
    assert!(s == 200 || s == 204, "{s} {b}");
    let text = context().await;
    assert!(!text.contains("saturdays rotate the keys"), "{text}");
    assert!(text.contains("fridays deploy nothing"), "{text}");
    app.stop().await;
}

/// A task context with relevant operations lists the decisions about the files they touched,
/// even one made in a session the task never found; and the project's memories and beliefs
/// it remembers between contexts give way at once to a memory or a belief added since.
#[tokio::test]
async fn a_task_context_reads_decisions_of_its_files_and_sees_long_term_changes_at_once() {
    let app = TestApp::spawn().await;
    let worked = start(&app, "key rotation", None).await;
    app.ops_sync(
        &worked,
        json!([{"type": "write", "summary": "rotated the signing keys in the vault module",
                "files_modified": ["src/vault.rs"]}]),
    )
    .await;
    let elsewhere = start(&app, "an unrelated review", None).await;
    let (s, b) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": elsewhere, "subject": "vault layout",
                    "choice": "one file per backend", "rationale": "backends change apart",
                    "files": ["src/vault.rs"]}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let context = || task_context(&app, "how were the signing keys rotated");
    let text = context().await;
    assert!(text.contains("rotated the signing keys"), "{text}");
    assert!(
        text.contains("- vault layout: one file per backend — backends change apart"),
        "{text}"
    );
    assert!(!text.contains("weekly"), "{text}");

    remember(&app, &worked, "signing keys rotate weekly").await;
    let id = belief(&app, "signing keys are rotated by hand").await;
    app.ops_sync(
        &worked,
        json!([{"type": "tool_call", "tool": "Bash", "summary": "rotated the signing keys by hand",
                "informs_belief": id}]),
    )
    .await;
    let text = context().await;
    assert!(text.contains("signing keys rotate weekly"), "{text}");
    assert!(text.contains("signing keys are rotated by hand"), "{text}");
    app.stop().await;
}
