//! Every session ends with a summary: closed by the API or by SessionEnd without one, or
//! marked abandoned by the idle sweep, it is summed up from what it holds (the compaction
//! summary first, else the last assistant turn and the todo list), redacted and bounded. A
//! summary that was sent, or stored before, is never replaced.

use serde_json::json;

use crate::helpers::{store, TestApp};

const ENC: cairn::config::Encoding = cairn::config::Encoding::O200kBase;

fn todos() -> serde_json::Value {
    json!([
        {"content": "add the coupon table", "status": "completed"},
        {"content": "validate codes at checkout", "status": "in_progress"},
        {"content": "write the docs", "status": "pending"}
    ])
}

/// A session holding a user turn, a todo list and two assistant turns (the last one with a
/// secret in it).
async fn worked_session(app: &TestApp) -> String {
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([
            {"type": "message", "role": "user", "content": "add coupon codes"},
            {"type": "message", "role": "assistant", "content": "Looking at checkout."},
            {"type": "todo", "todos": todos()},
            {"type": "message", "role": "assistant",
             "content": "Coupons are stored; checkout validation is half done. STRIPE_API_KEY=sk_live_abcdefghijklmnopqrstuvwx"}
        ]),
    )
    .await;
    sid
}

async fn summary_of(app: &TestApp, sid: &str, status: &str) -> String {
    let s = app
        .get_when(&format!("/v1/sessions/{sid}"), |s| {
            s["status"] == status && s["summary"].is_string()
        })
        .await;
    assert_eq!(s["status"], status, "{s}");
    s["summary"].as_str().unwrap_or_default().to_string()
}

fn assert_last_turn_and_todos(summary: &str) {
    assert!(
        summary.starts_with("Coupons are stored; checkout validation is half done."),
        "{summary}"
    );
    assert!(
        !summary.contains("sk_live_abcdefghijklmnopqrstuvwx"),
        "{summary}"
    );
    assert!(
        summary.ends_with(
            "Todos: 1 of 3 completed; in progress: validate codes at checkout; pending: write the docs"
        ),
        "{summary}"
    );
    assert!(cairn::domain::tokens::count(ENC, summary) <= cairn::capture::summary::SUMMARY_TOKENS);
}

#[tokio::test]
async fn a_close_without_a_summary_derives_one_and_a_sent_one_is_kept() {
    let app = TestApp::spawn().await;
    let sid = worked_session(&app).await;
    let (status, body) = app
        .post(&format!("/v1/sessions/{sid}/close"), &json!({}))
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    assert_last_turn_and_todos(&summary_of(&app, &sid, "closed").await);

    let sent = worked_session(&app).await;
    app.post(
        &format!("/v1/sessions/{sent}/close"),
        &json!({"summary": "coupons half done"}),
    )
    .await;
    assert_eq!(summary_of(&app, &sent, "closed").await, "coupons half done");
    // Closing again without one keeps it.
    app.post(&format!("/v1/sessions/{sent}/close"), &json!({}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(summary_of(&app, &sent, "closed").await, "coupons half done");
}

#[tokio::test]
async fn the_compaction_summary_comes_before_the_last_turn() {
    let app = TestApp::spawn().await;
    let sid = worked_session(&app).await;
    let (status, body) = app
        .post(
            "/v1/hooks/claude-code",
            &json!({"hook_event_name": "PostCompact", "session_id": sid, "trigger": "auto",
                    "compact_summary": "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n1. Primary Request: coupon codes at checkout\n2. Pending: validation"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    app.ops_sync(
        &sid,
        json!([{"type": "message", "role": "assistant", "content": "Back at it."}]),
    )
    .await;
    app.post(&format!("/v1/sessions/{sid}/close"), &json!({}))
        .await;
    assert_eq!(
        summary_of(&app, &sid, "closed").await,
        "1. Primary Request: coupon codes at checkout\n2. Pending: validation"
    );
}

#[tokio::test]
async fn session_end_from_the_hook_closes_with_a_derived_summary() {
    let app = TestApp::spawn().await;
    let sid = format!("cc-{}", uuid::Uuid::new_v4());
    let event = |name: &str, extra: serde_json::Value| {
        let mut e = json!({"hook_event_name": name, "session_id": sid, "cwd": "/home/dev/shop",
                           "transcript_path": "/tmp/t.jsonl"});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e
    };
    let events = [
        event("SessionStart", json!({"source": "startup"})),
        event("UserPromptSubmit", json!({"prompt": "add coupon codes"})),
        event(
            "PostToolUse",
            json!({"tool_name": "TodoWrite", "tool_use_id": "toolu_todo",
                   "tool_input": {"todos": todos()}, "tool_response": {}}),
        ),
        event(
            "Stop",
            json!({"last_assistant_message": "Coupons are stored; checkout validation is half done. STRIPE_API_KEY=sk_live_abcdefghijklmnopqrstuvwx"}),
        ),
        event("SessionEnd", json!({"reason": "prompt_input_exit"})),
    ];
    for e in events {
        let (status, body) = app.post("/v1/hooks/claude-code", &e).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_last_turn_and_todos(&summary_of(&app, &sid, "closed").await);
}

#[tokio::test]
async fn the_idle_sweep_sums_up_what_it_abandons() {
    let app = TestApp::spawn().await;
    let sid = worked_session(&app).await;
    let kept = worked_session(&app).await;
    app.post(
        &format!("/v1/sessions/{kept}/close"),
        &json!({"summary": "by hand", "status": "abandoned"}),
    )
    .await;
    let empty = app.session().await;
    store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {project: $project}) WHERE s.id IN $ids
                 SET s.last_activity_at = 0, s.status = 'active'",
            )
            .param("project", app.project.as_str())
            .param("ids", vec![sid.clone(), kept.clone(), empty.clone()]),
        )
        .await
        .unwrap();
    let n = cairn::graph::sessions::abandon_idle(&store(), 1, |m| {
        cairn::capture::summary::derive(m, ENC)
    })
    .await
    .unwrap();
    assert!(n >= 3, "{n}");
    assert_last_turn_and_todos(&summary_of(&app, &sid, "abandoned").await);
    assert_eq!(summary_of(&app, &kept, "abandoned").await, "by hand");
    let (_, row) = app.get(&format!("/v1/sessions/{empty}")).await;
    // Nothing to go on: no summary is made up.
    assert_eq!(
        (row["status"].as_str(), row["summary"].as_str()),
        (Some("abandoned"), None)
    );
}
