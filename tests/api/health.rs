use serde_json::json;

use crate::helpers::TestApp;

#[tokio::test]
async fn healthz_and_readyz_answer() {
    let app = TestApp::spawn().await;
    let (s, b) = app.get("/healthz").await;
    assert_eq!((s, b["status"].as_str()), (200, Some("ok")));
    let (s, b) = app.get("/readyz").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["status"], "ready");
    assert_eq!(b["schema_version"], b["expected_schema_version"]);
}

#[tokio::test]
async fn metrics_count_requests_by_route_template() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([{"type": "read", "summary": "r", "target": "a.rs"}]),
    )
    .await;
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("cairn_http_requests_total"), "{text}");
    assert!(
        text.contains("route=\"/v1/sessions/:param0/operations\""),
        "route label is the template: {text}"
    );
    assert!(!text.contains(&sid), "raw ids never become labels");
    assert!(text.contains("cairn_neo4j_query_seconds"));
    assert!(text.contains("cairn_writer_batch_operations"));
}

#[tokio::test]
async fn unknown_route_is_json_404() {
    let app = TestApp::spawn().await;
    let (s, b) = app.get("/v1/nope").await;
    assert_eq!(s, 404);
    assert_eq!(b["error"]["code"], "route_not_found");
}

#[tokio::test]
async fn malformed_json_is_400_with_code() {
    let app = TestApp::spawn().await;
    let r = app
        .client
        .post(app.url("/v1/sessions"))
        .header("content-type", "application/json")
        .body("{\"project\": ")
        .send()
        .await
        .unwrap();
    let (s, b) = crate::helpers::split(r).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"]["code"], "malformed_json");
}

#[tokio::test]
async fn wrong_field_type_names_the_field() {
    let app = TestApp::spawn().await;
    let (s, b) = app
        .post("/v1/sessions", &json!({"project": {"nested": true}}))
        .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"]["code"], "invalid_body", "{b}");
    assert_eq!(b["error"]["field"], "project");
}

#[tokio::test]
async fn oversize_body_is_413_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let big = "x".repeat(5 * 1024 * 1024);
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/operations"),
            &json!({"operations": [{"type": "read", "summary": big}]}),
        )
        .await;
    assert_eq!(s, 413, "{b}");
    assert_eq!(b["error"]["code"], "payload_too_large");
    let n = crate::helpers::count(
        "MATCH (o:Operation {project: $project}) RETURN count(o) AS n",
        &app.project,
    )
    .await;
    assert_eq!(n, 0);
}

#[tokio::test]
async fn readyz_turns_503_when_neo4j_goes_and_recovers_without_restart() {
    let proxy = crate::helpers::neo4j_proxy().await;
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::builder()
        .spool_dir(&dir.path().join("spool"))
        .behind(&proxy)
        .spawn()
        .await;
    crate::helpers::eventually(60, "ready", || async { app.get("/readyz").await.0 == 200 }).await;
    proxy.cut();
    let started = std::time::Instant::now();
    crate::helpers::eventually(5, "not ready within 5 s", || async {
        app.get("/readyz").await.0 == 503
    })
    .await;
    let (_, b) = app.get("/readyz").await;
    assert!(
        b["reason"].as_str().unwrap_or_default().contains("neo4j"),
        "{b}"
    );
    assert!(started.elapsed().as_secs() < 5);
    assert_eq!(
        app.get("/healthz").await.0,
        200,
        "liveness does not depend on neo4j"
    );
    proxy.restore();
    crate::helpers::eventually(60, "ready again", || async {
        app.get("/readyz").await.0 == 200
    })
    .await;
    app.stop().await;
}
