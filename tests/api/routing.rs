//! `neo4j://` (routing) URIs: the driver asks the server for its routing table and sends
//! writes to a writer and reads to readers. Against the single local server (its own router,
//! writer and reader) the whole write/read path must work through such a URI.

use serde_json::json;

use crate::helpers::{neo4j_uri, TestApp};

pub(crate) fn routing_uri() -> String {
    let uri = neo4j_uri();
    let rest = uri.split_once("://").map_or(uri.as_str(), |(_, r)| r);
    format!("neo4j://{rest}")
}

#[tokio::test]
async fn capture_and_recall_work_through_a_routing_uri() {
    let uri = routing_uri();
    let app = TestApp::builder()
        .with(move |s| s.neo4j.uri = uri)
        .spawn()
        .await;
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    let sid = app.session().await;
    let ids: Vec<String> = (0..3).map(|i| format!("{sid}-routed-{i}")).collect();
    let ops: Vec<_> = ids
        .iter()
        .map(|id| json!({"id": id, "type": "read", "target": "src/lib.rs", "summary": "routed read"}))
        .collect();
    app.ops_sync(&sid, json!(ops)).await;
    // Written through the routing driver, read back through it at once (?sync=true).
    let (status, rec) = app.get(&format!("/v1/sessions/{sid}/reconstruction")).await;
    assert_eq!(status, 200, "{rec}");
    let seen: Vec<&str> = rec["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(seen, ids.iter().map(String::as_str).collect::<Vec<_>>());
    let (status, body) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": sid, "subject": "routing",
                    "choice": "neo4j scheme", "rationale": "clusters route"}),
        )
        .await;
    assert!(status == 201, "{status} {body}");
    let (status, list) = app
        .get(&format!(
            "/v1/decisions?project={}&subject=routing",
            app.project
        ))
        .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["decisions"][0]["choice"], "neo4j scheme", "{list}");
    app.stop().await;
}
