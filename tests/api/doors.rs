//! One rule per parameter, whichever door a request comes in by: the HTTP routes, the
//! Claude Code hook route and the MCP tools accept and refuse the same token budgets, list
//! limits and projects with the same codes, and share the reconstruction's defaults.

use serde_json::{json, Value};

use crate::helpers::{split, TestApp};

/// Calls an MCP tool over plain JSON-RPC (the server is stateless); `(is_error, text)`.
async fn tool(app: &TestApp, name: &str, arguments: Value) -> (bool, String) {
    let r = app
        .client
        .post(app.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}}))
        .send()
        .await
        .unwrap();
    let (status, body) = split(r).await;
    assert_eq!(status, 200, "{name}: {body}");
    let result = &body["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == json!(true), text.to_string())
}

/// `(status, code, field)` of an HTTP answer.
fn verdict(answer: &(u16, Value)) -> (u16, Option<&str>, Option<&str>) {
    let e = &answer.1["error"];
    (answer.0, e["code"].as_str(), e["field"].as_str())
}

#[tokio::test]
async fn every_door_takes_the_same_token_budgets() {
    let app = TestApp::spawn().await;
    let p = app.project.clone();
    let session = app.session().await;
    let hook =
        json!({"hook_event_name": "SessionStart", "session_id": session, "source": "startup"});
    for (budget, ok) in [
        (15, false),
        (16, true),
        (1_000_000, true),
        (1_000_001, false),
    ] {
        let answers = [
            app.post(
                "/v1/context",
                &json!({"project": p, "task": "anything", "budget_tokens": budget}),
            )
            .await,
            app.get(&format!("/v1/handover?project={p}&budget_tokens={budget}"))
                .await,
            app.get(&format!(
                "/v1/knowledge?project={p}&files=a.rs&budget_tokens={budget}"
            ))
            .await,
            app.post(
                &format!("/v1/hooks/claude-code?project={p}&budget_tokens={budget}"),
                &hook,
            )
            .await,
        ];
        for (i, a) in answers.iter().enumerate() {
            if ok {
                assert_eq!(a.0, 200, "door {i}, budget {budget}: {}", a.1);
            } else {
                assert_eq!(
                    verdict(a),
                    (400, Some("invalid_budget"), Some("budget_tokens")),
                    "door {i}, budget {budget}"
                );
            }
        }
        for (name, args) in [
            (
                "get_context",
                json!({"task": "anything", "budget_tokens": budget}),
            ),
            ("get_handover", json!({"budget_tokens": budget})),
            (
                "get_knowledge",
                json!({"files": ["a.rs"], "budget_tokens": budget}),
            ),
        ] {
            let (is_error, text) = tool(&app, name, args).await;
            assert_eq!(is_error, !ok, "{name}, budget {budget}: {text}");
            if !ok {
                assert!(
                    text.contains("invalid_budget") && text.contains("budget_tokens"),
                    "{name}: {text}"
                );
            }
        }
    }
    // A hook may turn an answer off with 0; elsewhere 0 is out of range.
    let off = app
        .post(
            &format!("/v1/hooks/claude-code?project={p}&budget_tokens=0"),
            &hook,
        )
        .await;
    assert_eq!((off.0, off.1.clone()), (200, json!({})));
    let zero = app
        .get(&format!("/v1/handover?project={p}&budget_tokens=0"))
        .await;
    assert_eq!(verdict(&zero).1, Some("invalid_budget"));
}

#[tokio::test]
async fn every_door_takes_the_same_limits_and_projects() {
    let app = TestApp::spawn().await;
    let p = app.project.clone();
    let over = [
        app.post(
            "/v1/sessions/search",
            &json!({"project": p, "query": "x", "limit": 51}),
        )
        .await,
        app.post(
            "/v1/search",
            &json!({"project": p, "query": "x", "limit": 51}),
        )
        .await,
        app.get(&format!("/v1/beliefs?project={p}&limit=1001"))
            .await,
        app.get(&format!("/v1/decisions?project={p}&limit=1001"))
            .await,
    ];
    for (i, a) in over.iter().enumerate() {
        assert_eq!(
            verdict(a),
            (400, Some("invalid_limit"), Some("limit")),
            "route {i}"
        );
    }
    for (name, args) in [
        ("search_sessions", json!({"query": "x", "limit": 51})),
        ("search_memory", json!({"query": "x", "limit": 51})),
        ("list_beliefs", json!({"limit": 1001})),
    ] {
        let (is_error, text) = tool(&app, name, args).await;
        assert!(is_error && text.contains("invalid_limit"), "{name}: {text}");
    }
    let (is_error, text) = tool(&app, "search_sessions", json!({"query": "x", "limit": 50})).await;
    assert!(!is_error, "{text}");

    // A key of one project names no other, malformed or not; a blank name is a missing one.
    for other in ["someone-else", "bad project!"] {
        let q = crate::hostile::query(&[("project", other)]);
        let answers = [
            app.post(
                "/v1/sessions/search",
                &json!({"project": other, "query": "x"}),
            )
            .await,
            app.get(&format!("/v1/handover?{q}")).await,
            app.get(&format!("/v1/beliefs?{q}")).await,
        ];
        for a in &answers {
            assert_eq!(verdict(a).0, 403, "{other}: {}", a.1);
            assert_eq!(verdict(a).1, Some("forbidden"));
        }
        let (is_error, text) = tool(&app, "list_beliefs", json!({"project": other})).await;
        assert!(is_error && text.contains("forbidden"), "{text}");
    }
    let blank = app.get("/v1/handover?project=%20").await;
    assert_eq!(
        verdict(&blank),
        (400, Some("missing_field"), Some("project"))
    );
    // MCP reads a blank optional argument as absent: the key's project.
    let (is_error, text) = tool(&app, "list_beliefs", json!({"project": ""})).await;
    assert!(!is_error, "{text}");
}

#[tokio::test]
async fn http_and_mcp_reconstruct_with_the_same_defaults() {
    let app = TestApp::spawn().await;
    let session = app.session().await;
    app.ops_sync(
        &session,
        json!([
            {"type": "read", "target": "src/a.rs", "summary": "read a", "files_read": ["src/a.rs"]},
            {"type": "write", "target": "src/a.rs", "summary": "changed a", "files_modified": ["src/a.rs"]},
        ]),
    )
    .await;
    let (status, http) = app
        .get(&format!(
            "/v1/sessions/{session}/reconstruction?project={}",
            app.project
        ))
        .await;
    assert_eq!(status, 200, "{http}");
    let (is_error, text) = tool(&app, "reconstruct_session", json!({"session_id": session})).await;
    assert!(!is_error, "{text}");
    let mcp: Value = serde_json::from_str(&text).unwrap();
    let kinds = |r: &Value| -> Vec<String> {
        r["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&http), vec!["read", "write"]);
    assert_eq!(kinds(&mcp), kinds(&http));
    let (is_error, text) = tool(
        &app,
        "reconstruct_session",
        json!({"session_id": session, "max_operations": 5001}),
    )
    .await;
    assert!(
        is_error && text.contains("invalid_max_operations"),
        "{text}"
    );
}
