//! `POST /v1/search`: turn-level search over operations, decisions, memories and session
//! summaries — BM25 always, vectors when an embedder is configured (faked at the HTTP
//! boundary), filters, diversity, validation.

use serde_json::{json, Value};

use crate::helpers::{settle, spawn_app, TestApp};

pub async fn turn_search(app: &TestApp, body: Value) -> (u16, Value) {
    app.post("/v1/search", &body).await
}

/// Waits (the turn index is eventually consistent) until `query` answers with a hit that
/// satisfies `found`; returns the last answer.
pub async fn search_until(app: &TestApp, body: Value, found: impl Fn(&[Value]) -> bool) -> Value {
    settle(
        60,
        || async {
            let (status, answer) = turn_search(app, body.clone()).await;
            assert_eq!(status, 200, "{answer}");
            answer
        },
        |answer: &Value| {
            found(
                answer["operations"]
                    .as_array()
                    .map_or(&[], |a| a.as_slice()),
            )
        },
    )
    .await
}

/// A session about token expiry with a few unrelated turns around the answer.
async fn conversation(app: &TestApp) -> String {
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([
            {"id": format!("{sid}-q"), "type": "message", "role": "user", "summary": "question",
             "content": "when do the access tokens expire?"},
            {"id": format!("{sid}-a"), "type": "message", "role": "assistant", "summary": "answer",
             "content": "Access tokens expire after thirty minutes of inactivity; the refresh token rotates on every use."},
            {"id": format!("{sid}-t"), "type": "tool_call", "tool": "Bash", "target": "cargo test auth",
             "summary": "12 passed", "status": "ok"},
            {"id": format!("{sid}-r"), "type": "read", "target": "src/auth.rs", "summary": "read the auth module",
             "files_read": ["src/auth.rs"]},
            {"id": format!("{sid}-w"), "type": "message", "role": "user", "summary": "weather",
             "content": "unrelated: the nightly backup job is slow"}
        ]),
    )
    .await;
    let (status, body) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": sid, "subject": "session lifetime",
                    "choice": "sliding expiry of thirty minutes", "rationale": "fewer forced logins",
                    "alternatives": ["fixed daily lifetime", "never expire"]}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let (status, body) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": sid, "kind": "lesson",
                    "content": "rotating refresh tokens broke the mobile client once"}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let (status, body) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": "settled how tokens expire", "next_steps": ["document expiry"]}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    sid
}

fn kinds(ops: &[Value]) -> Vec<&str> {
    ops.iter()
        .map(|o| o["type"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn turns_decisions_memories_and_summaries_are_found_by_their_words() {
    let app = spawn_app().await;
    let sid = conversation(&app).await;
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "when do tokens expire", "limit": 10}),
        |ops| {
            let k = kinds(ops);
            k.contains(&"message") && k.contains(&"decision") && k.contains(&"summary")
        },
    )
    .await;
    assert_eq!(answer["mode"], "fulltext", "{answer}");
    let ops = answer["operations"].as_array().expect("operations");
    let top = &ops[0];
    assert_eq!(top["session_id"], sid.as_str(), "{answer}");
    assert_eq!(top["matched_by"], "fulltext");
    assert!(top["score"].as_f64().unwrap() > 0.0);
    assert!(
        top["snippet"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("expir"),
        "{top}"
    );
    let question = ops
        .iter()
        .find(|o| o["operation_id"] == format!("{sid}-q").as_str())
        .expect("the question is found");
    assert_eq!(question["seq"], 1);
    assert_eq!(question["role"], "user");
    // A plain read has nothing worth finding; the unrelated turn does not match.
    assert!(!ops.iter().any(|o| o["type"] == "read"), "{answer}");
    assert!(!ops
        .iter()
        .any(|o| o["operation_id"] == format!("{sid}-w").as_str()));

    // A decision is found by what it rejected, and `types` keeps only decisions.
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "fixed daily lifetime", "types": ["decision"]}),
        |ops| !ops.is_empty(),
    )
    .await;
    let ops = answer["operations"].as_array().unwrap();
    assert_eq!(kinds(ops), ["decision"], "{answer}");
    assert!(ops[0]["snippet"]
        .as_str()
        .unwrap()
        .contains("rejected: fixed daily lifetime"));

    // Memories are turns too.
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "mobile client broke", "types": ["memory"]}),
        |ops| !ops.is_empty(),
    )
    .await;
    assert_eq!(answer["operations"][0]["type"], "memory", "{answer}");
    assert_eq!(answer["operations"][0]["session_id"], sid.as_str());
}

#[tokio::test]
async fn another_projects_turns_stay_hidden_and_lucene_syntax_is_text() {
    let a = spawn_app().await;
    let sid = a.session().await;
    a.ops_sync(
        &sid,
        json!([{"type": "message", "role": "user", "summary": "s",
                "content": "zanzibar quokka migration plan (phase:2)"}]),
    )
    .await;
    search_until(
        &a,
        json!({"project": a.project, "query": "zanzibar quokka"}),
        |ops| ops.len() == 1,
    )
    .await;
    // Syntax characters are searched as text, never parsed.
    let (status, body) = turn_search(
        &a,
        json!({"project": a.project, "query": "quokka (phase:2) AND \"zanz* OR ~"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["operations"].as_array().unwrap().len(), 1, "{body}");

    let b = spawn_app().await;
    let (status, body) = turn_search(
        &b,
        json!({"project": b.project, "query": "zanzibar quokka"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["operations"], json!([]), "{body}");
    // B's key cannot read A's project.
    let (status, body) = turn_search(&b, json!({"project": a.project, "query": "zanzibar"})).await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn bad_turn_searches_answer_400_with_stable_codes() {
    let app = spawn_app().await;
    for (body, code, field) in [
        (
            json!({"project": app.project, "query": "x", "limit": 0}),
            "invalid_limit",
            "limit",
        ),
        (
            json!({"project": app.project, "query": "x", "limit": 51}),
            "invalid_limit",
            "limit",
        ),
        (
            json!({"project": app.project, "query": "x", "types": ["message", "bogus"]}),
            "invalid_types",
            "types[1]",
        ),
        (
            json!({"project": app.project, "query": "x", "types": vec!["message"; 17]}),
            "invalid_types",
            "types",
        ),
        (
            json!({"project": app.project, "query": "x".repeat(1001)}),
            "field_too_large",
            "query",
        ),
    ] {
        let (status, answer) = turn_search(&app, body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
}
