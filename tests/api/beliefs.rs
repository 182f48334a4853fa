use serde_json::json;

use crate::helpers::{count, TestApp};

#[tokio::test]
async fn beliefs_list_by_status_with_prior_conviction() {
    let app = TestApp::spawn().await;
    for (content, status) in [("a", "active"), ("b", "proposed")] {
        let (s, b) = app
            .post("/v1/beliefs", &json!({"project": app.project, "content": content, "status": status, "conviction": 0.9}))
            .await;
        assert_eq!(s, 200, "{b}");
    }
    let (_, list) = app
        .get(&format!(
            "/v1/beliefs?project={}&status=proposed",
            app.project
        ))
        .await;
    let items = list["beliefs"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["content"], "b");
    let c = items[0]["conviction"].as_f64().unwrap();
    assert!(
        (c - 2.8 / 4.0).abs() < 0.01,
        "prior 0.9 worth two observations: {c}"
    );
    let (s, b) = app
        .get(&format!("/v1/beliefs?project={}&status=maybe", app.project))
        .await;
    assert_eq!((s, b["error"]["field"].as_str()), (400, Some("status")));
}

#[tokio::test]
async fn memories_are_asserted_in_their_session() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (s, b) = app
        .post("/v1/memories", &json!({"project": app.project, "session_id": sid, "kind": "lesson", "content": "run migrations before tests", "confidence": 0.9}))
        .await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(count("MATCH (m:Memory {project: $project, kind: 'lesson'})-[:ASSERTED_IN]->(:Session) RETURN count(m) AS n", &app.project).await, 1);
    let (s, b) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "kind": "rumour", "content": "x"}),
        )
        .await;
    assert_eq!((s, b["error"]["field"].as_str()), (400, Some("kind")));
}
