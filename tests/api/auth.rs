//! Keys and isolation: for every route, a key of project A can neither read, write, search,
//! delete nor build context from project B; missing and malformed keys are refused.

use serde_json::json;

use crate::helpers::{client_with_key, split, TestApp};

#[tokio::test]
async fn missing_malformed_and_revoked_keys_get_401() {
    let app = TestApp::spawn().await;
    let anon = client_with_key("");
    let r = anon
        .get(app.url(&format!("/v1/decisions?project={}", app.project)))
        .send()
        .await
        .unwrap();
    let (s, b) = split(r).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );
    for bad in [
        "nonsense",
        "cairn_0123456789abcdef_00",
        &format!("cairn_0123456789abcdef_{}", "0".repeat(64)),
    ] {
        let r = client_with_key(bad)
            .get(app.url(&format!("/v1/decisions?project={}", app.project)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{bad}");
    }
    // Health stays open.
    assert_eq!(
        anon.get(app.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
}

#[tokio::test]
async fn scopes_are_enforced() {
    let app = TestApp::spawn().await;
    let reader = app.client_for(&app.project, "read").await;
    let r = reader
        .post(app.url("/v1/sessions"))
        .json(&json!({"project": app.project}))
        .send()
        .await
        .unwrap();
    let (s, b) = split(r).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (403, Some("insufficient_scope"))
    );
    let r = reader
        .get(app.url(&format!("/v1/beliefs?project={}", app.project)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let writer = app.client_for(&app.project, "write").await;
    let r = writer
        .delete(app.url(&format!("/v1/projects/{}", app.project)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
}

#[tokio::test]
async fn a_key_of_project_a_cannot_touch_project_b() {
    let app = TestApp::spawn().await; // app.client holds an admin key of project B = app.project
    let b = app.project.clone();
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([{"type": "read", "summary": "secret read", "files_read": ["secret.rs"]}]),
    )
    .await;
    let (_, belief) = app
        .post(
            "/v1/beliefs",
            &json!({"project": b, "content": "b's belief"}),
        )
        .await;
    assert!(belief["id"].is_string());
    let (_, run) = app
        .post("/v1/extraction/runs", &json!({"project": b}))
        .await;
    let run_id = run["run_id"].as_str().expect("run id").to_string();
    let belief_id = belief["id"].as_str().unwrap().to_string();
    let a = format!("{b}-a");
    let intruder = app.client_for(&a, "admin").await;

    let probes: Vec<(&str, String, Option<serde_json::Value>)> = vec![
        ("GET", format!("/v1/sessions/{sid}"), None),
        ("GET", format!("/v1/sessions/{sid}?project={b}"), None),
        (
            "POST",
            format!("/v1/sessions/{sid}/operations"),
            Some(json!({"operations": [{"type": "read", "summary": "x"}]})),
        ),
        ("POST", format!("/v1/sessions/{sid}/close"), Some(json!({}))),
        ("DELETE", format!("/v1/sessions/{sid}"), None),
        ("POST", "/v1/sessions".into(), Some(json!({"project": b}))),
        (
            "POST",
            "/v1/decisions".into(),
            Some(json!({"project": b, "subject": "s", "choice": "c", "rationale": "r"})),
        ),
        ("GET", format!("/v1/decisions?project={b}"), None),
        (
            "POST",
            "/v1/beliefs".into(),
            Some(json!({"project": b, "content": "x"})),
        ),
        ("GET", format!("/v1/beliefs?project={b}"), None),
        (
            "POST",
            "/v1/memories".into(),
            Some(json!({"project": b, "kind": "fact", "content": "x"})),
        ),
        ("GET", format!("/v1/sessions/{sid}/reconstruction"), None),
        (
            "GET",
            format!("/v1/sessions/{sid}/window?token_limit=100"),
            None,
        ),
        (
            "POST",
            "/v1/context".into(),
            Some(json!({"project": b, "session_id": sid, "budget_tokens": 500})),
        ),
        (
            "POST",
            "/v1/context".into(),
            Some(json!({"project": b, "task": "secret", "budget_tokens": 500})),
        ),
        (
            "POST",
            "/v1/sessions/search".into(),
            Some(json!({"project": b, "query": "secret"})),
        ),
        ("GET", format!("/v1/handover?project={b}"), None),
        (
            "GET",
            format!("/v1/knowledge?project={b}&files=secret.rs"),
            None,
        ),
        (
            "POST",
            "/v1/extraction/runs".into(),
            Some(json!({"project": b})),
        ),
        ("GET", format!("/v1/extraction/runs/{run_id}"), None),
        (
            "POST",
            format!("/v1/beliefs/{belief_id}/approve"),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/v1/beliefs/{belief_id}/reject"),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/v1/hooks/claude-code?project={b}"),
            Some(
                json!({"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": "x", "cwd": "/x"}),
            ),
        ),
        ("DELETE", format!("/v1/projects/{b}"), None),
    ];
    let mut refused = 0;
    for (method, path, body) in &probes {
        let req = match *method {
            "GET" => intruder.get(app.url(path)),
            "POST" => intruder.post(app.url(path)).json(body.as_ref().unwrap()),
            _ => intruder.delete(app.url(path)),
        };
        let (s, resp) = split(req.send().await.unwrap()).await;
        assert!(s == 403 || s == 404, "{method} {path} answered {s}: {resp}");
        assert!(
            !resp.to_string().contains("secret"),
            "{method} {path} leaked: {resp}"
        );
        refused += 1;
    }
    assert_eq!(refused, probes.len());
    eprintln!("isolation probes refused: {refused}");
    // Project B is untouched.
    let (s, row) = app.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(
        (s, row["status"].as_str(), row["operation_count"].as_i64()),
        (200, Some("active"), Some(1))
    );
}

#[tokio::test]
async fn rate_limited_keys_get_429_with_retry_after() {
    let app = TestApp::builder()
        .with(|s| {
            s.rate_limit_per_sec = 2;
            s.rate_limit_burst = 2;
        })
        .spawn()
        .await;
    // Sent at once, so a slow answer cannot give the bucket time to refill.
    let url = app.url(&format!("/v1/beliefs?project={}", app.project));
    let answers = futures::future::join_all((0..10).map(|_| app.client.get(&url).send())).await;
    let r = answers
        .into_iter()
        .map(|r| r.expect("request"))
        .find(|r| r.status().as_u16() == 429)
        .expect("the bucket of 2 empties within 10 simultaneous requests");
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1);
    let (_, b) = split(r).await;
    assert_eq!(b["error"]["code"], "rate_limited");
}

#[tokio::test]
async fn admin_actions_leave_an_audit_trail() {
    let app = TestApp::spawn().await;
    let (s, _) = app.delete(&format!("/v1/projects/{}", app.project)).await;
    assert_eq!(s, 200);
    let trail = cairn::graph::keys::audit_trail(&crate::helpers::store(), &app.project, 10)
        .await
        .unwrap();
    let actions: Vec<&str> = trail.iter().map(|e| e.action.as_str()).collect();
    assert!(actions.contains(&"project_purged"), "{actions:?}");
    assert!(actions.contains(&"key_created"), "{actions:?}");
}
