//! The OpenAPI spec is snapshotted so an accidental API change shows up in review.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test openapi`.

use crate::helpers::spawn_app;

#[tokio::test]
async fn spec_matches_snapshot() {
    let app = spawn_app().await;
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
    let app = spawn_app().await;
    let r = app.client.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let html = r.text().await.unwrap();
    assert!(html.to_lowercase().contains("swagger"));
}

/// Each route lists the error statuses it can answer, not every status the server knows.
#[tokio::test]
async fn routes_list_only_their_own_error_statuses() {
    let app = spawn_app().await;
    let spec: serde_json::Value = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let statuses = |path: &str, method: &str| -> Vec<String> {
        let responses = spec["paths"][path][method]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} has responses"));
        responses.keys().cloned().collect()
    };
    let listed = statuses("/v1/decisions", "get");
    assert!(listed.contains(&"401".into()) && listed.contains(&"503".into()));
    for absent in ["404", "409", "413", "415", "422", "504"] {
        assert!(
            !listed.contains(&absent.into()),
            "GET /v1/decisions lists {absent}"
        );
    }
    let listed = statuses("/v1/sessions/{id}/operations", "post");
    for present in ["202", "400", "404", "413", "415", "422", "504"] {
        assert!(
            listed.contains(&present.into()),
            "operations lacks {present}"
        );
    }
    assert!(!listed.contains(&"409".into()));
    let listed = statuses("/v1/sessions/{id}", "get");
    assert!(listed.contains(&"404".into()));
    assert!(!listed.contains(&"413".into()));
}
