//! The OpenAPI spec is snapshotted so an accidental API change shows up in review.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test openapi`.

use crate::helpers::TestApp;

#[tokio::test]
async fn spec_matches_snapshot() {
    let app = TestApp::spawn().await;
    let spec = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/openapi.json");
    if std::env::var("UPDATE_SNAPSHOTS").is_ok() {
        std::fs::create_dir_all(std::path::Path::new(path).parent().unwrap()).unwrap();
        std::fs::write(path, &pretty).unwrap();
    }
    let stored =
        std::fs::read_to_string(path).expect("snapshot exists; run with UPDATE_SNAPSHOTS=1 once");
    assert_eq!(
        stored, pretty,
        "the OpenAPI spec changed; review and run with UPDATE_SNAPSHOTS=1"
    );
    for route in [
        "/v1/sessions",
        "/v1/sessions/{id}/operations",
        "/v1/decisions",
        "/readyz",
    ] {
        assert!(value["paths"].get(route).is_some(), "missing {route}");
    }
}

#[tokio::test]
async fn swagger_ui_is_served() {
    let app = TestApp::spawn().await;
    let r = app.client.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let html = r.text().await.unwrap();
    assert!(html.to_lowercase().contains("swagger"));
}
