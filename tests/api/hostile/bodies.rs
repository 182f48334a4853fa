//! Bodies no client should send: nesting far past any sane depth, invalid UTF-8, more bytes
//! than the limit (declared or streamed), and other content types. Each gets a JSON 4xx with
//! a stable code on every route that reads a body, writes nothing, and the server keeps
//! answering `/healthz`.

use futures::stream;
use reqwest::{header::CONTENT_TYPE, Body, Method};
use serde_json::{json, Value};

use super::{assert_alive, assert_error, labels};
use crate::helpers::{split, TestApp};

/// Every route that takes a JSON body, with a body it accepts.
fn json_routes(app: &TestApp, sid: &str) -> Vec<(String, Value)> {
    let p = &app.project;
    vec![
        ("/v1/sessions".into(), json!({"project": p})),
        (format!("/v1/sessions/{sid}/close"), json!({})),
        (
            format!("/v1/sessions/{sid}/operations"),
            json!({"operations": [{"type": "read", "summary": "s"}]}),
        ),
        (
            "/v1/decisions".into(),
            json!({"project": p, "subject": "s", "choice": "c", "rationale": "r"}),
        ),
        (
            "/v1/memories".into(),
            json!({"project": p, "kind": "fact", "content": "c"}),
        ),
        ("/v1/beliefs".into(), json!({"project": p, "content": "c"})),
        ("/v1/extraction/runs".into(), json!({"project": p})),
        (
            "/v1/hooks/claude-code".into(),
            json!({"hook_event_name": "Stop", "session_id": sid}),
        ),
        (
            "/v1/sessions/search".into(),
            json!({"project": p, "query": "q"}),
        ),
        (
            "/v1/context".into(),
            json!({"project": p, "budget_tokens": 100}),
        ),
    ]
}

/// Every route that writes, body or not, with its method.
fn write_routes(app: &TestApp, sid: &str) -> Vec<(Method, String)> {
    let mut routes: Vec<(Method, String)> = json_routes(app, sid)
        .into_iter()
        .map(|(path, _)| (Method::POST, path))
        .collect();
    routes.extend([
        (Method::POST, "/v1/beliefs/b/approve".to_string()),
        (Method::POST, "/v1/beliefs/b/reject".to_string()),
        (Method::DELETE, format!("/v1/sessions/{sid}")),
        (Method::DELETE, format!("/v1/projects/{}", app.project)),
    ]);
    routes
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).body(body);
    if let Some(ct) = content_type {
        req = req.header(CONTENT_TYPE, ct);
    }
    split(req.send().await.expect("request")).await
}

/// Sends `body` to every JSON route and expects `status` with `code`; the server must stay
/// up and the project unchanged.
async fn refuse_everywhere(app: &TestApp, sid: &str, body: &[u8], status: u16, code: &str) {
    let before = labels(&app.project).await;
    for (path, _) in json_routes(app, sid) {
        let answer = send(
            app,
            Method::POST,
            &path,
            Some("application/json"),
            body.to_vec(),
        )
        .await;
        let shown = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
        assert_error(&answer, status, code, &format!("{path} with {shown:?}"));
        assert_alive(app, &path).await;
    }
    assert_eq!(labels(&app.project).await, before, "a refused body wrote");
}

/// `depth` nested arrays around `inner`.
fn nested(depth: usize, inner: &str) -> String {
    format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test]
async fn deep_nesting_is_a_clean_400_everywhere() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let deep = 100_000;
    let bodies = [
        "[".repeat(deep),
        "{\"a\":".repeat(deep),
        nested(deep, "1"),
        format!(
            "{{\"project\": \"{}\", \"x\": {}}}",
            app.project,
            nested(deep, "{}")
        ),
        format!("{}1{}", "{\"a\":[".repeat(deep / 2), "]}".repeat(deep / 2)),
    ];
    for body in &bodies {
        refuse_everywhere(&app, &sid, body.as_bytes(), 400, "malformed_json").await;
        let (s, b) = send(
            &app,
            Method::POST,
            "/mcp",
            Some("application/json"),
            body.clone(),
        )
        .await;
        assert!(s < 500, "/mcp: {s} {b}");
        assert_alive(&app, "/mcp").await;
    }
}

#[tokio::test]
async fn nesting_just_inside_the_parser_limit_is_stored_or_refused_cleanly() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let deep: Value = serde_json::from_str(&nested(120, "\"leaf\"")).unwrap();
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/operations?sync=true"),
            &json!({"operations": [{"type": "read", "summary": "deep", "context": {"d": deep}}]}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = app
        .post(
            "/v1/hooks/claude-code",
            &json!({"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Deep",
                    "tool_use_id": "t1", "tool_input": {"d": deep}, "tool_response": deep}),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let answer = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "subject": "s", "choice": "c", "rationale": "r",
                    "affects_beliefs": [deep]}),
        )
        .await;
    assert_error(
        &answer,
        400,
        "invalid_belief_ref",
        "a nested belief reference",
    );
    assert_alive(&app, "nested values").await;
}

#[tokio::test]
async fn invalid_utf8_is_400_malformed_json_everywhere() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let bodies: [&[u8]; 6] = [
        b"{\"project\": \"\xff\xfe\"}",
        b"{\"project\": \"\xc0\xaf\"}",
        b"{\"project\": \"\xe6\x97\"}",
        b"{\"project\": \"\xed\xa0\x80\"}",
        b"{\"project\": \"\\ud800\"}",
        b"\xef\xbb\xbf{\"project\": \"p\"}",
    ];
    for body in bodies {
        refuse_everywhere(&app, &sid, body, 400, "malformed_json").await;
    }
}

#[tokio::test]
async fn oversize_bodies_are_413_on_every_write_route() {
    let limit = 16 * 1024;
    let app = TestApp::builder()
        .with(|s| s.max_body_bytes = limit)
        .spawn()
        .await;
    let sid = app.session().await;
    let before = labels(&app.project).await;
    let big = serde_json::to_vec(&json!({"project": app.project, "x": "y".repeat(limit)})).unwrap();
    for (method, path) in write_routes(&app, &sid) {
        let declared = send(
            &app,
            method.clone(),
            &path,
            Some("application/json"),
            big.clone(),
        )
        .await;
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            big.chunks(1024).map(|c| Ok(c.to_vec())).collect();
        let streamed = send(
            &app,
            method.clone(),
            &path,
            Some("application/json"),
            Body::wrap_stream(stream::iter(chunks)),
        )
        .await;
        for (how, answer) in [("declared", declared), ("streamed", streamed)] {
            let what = format!("{method} {path} ({how})");
            assert_error(&answer, 413, "payload_too_large", &what);
        }
        assert_alive(&app, &path).await;
    }
    assert_eq!(labels(&app.project).await, before, "a refused body wrote");
}

#[tokio::test]
async fn other_content_types_are_415_everywhere() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let before = labels(&app.project).await;
    let types = [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/xml"),
        Some("application/jsonp"),
        None,
    ];
    for (path, body) in json_routes(&app, &sid) {
        for ct in types {
            let answer = send(&app, Method::POST, &path, ct, body.to_string()).await;
            let what = format!("{path} as {ct:?}");
            assert_error(&answer, 415, "unsupported_media_type", &what);
        }
        assert_alive(&app, &path).await;
    }
    assert_eq!(labels(&app.project).await, before, "a refused body wrote");
}
