//! The OpenAPI spec is snapshotted so an accidental API change shows up in review.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test openapi`.

use crate::helpers::TestApp;

/// The document `/openapi.json` serves.
async fn served_spec(app: &TestApp) -> serde_json::Value {
    reqwest::get(app.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

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

/// Each route lists the error statuses it can answer, not every status the server knows.
#[tokio::test]
async fn routes_list_only_their_own_error_statuses() {
    let app = TestApp::spawn().await;
    let spec = served_spec(&app).await;
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

/// What Swagger UI's Authorize does: read the route's security requirement and the scheme it
/// names from the spec, and send the key the way the scheme says.
#[tokio::test]
async fn a_v1_route_is_called_with_the_scheme_the_spec_declares() {
    let app = TestApp::spawn().await;
    let spec = served_spec(&app).await;
    let key = crate::helpers::mint_key(&app.project, "read").await;
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let needs_key = path.starts_with("/v1/");
            let security = op["security"].as_array();
            assert_eq!(
                security.is_some_and(|s| !s.is_empty()),
                needs_key,
                "{method} {path}: security {security:?}"
            );
        }
    }
    let op = &spec["paths"]["/v1/decisions"]["get"];
    let name = op["security"][0]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let scheme = &spec["components"]["securitySchemes"][name];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    // A plain client with no default headers: only what the scheme says is sent.
    let plain = reqwest::Client::new();
    let url = app.url(&format!("/v1/decisions?project={}", app.project));
    let without = plain.get(&url).send().await.unwrap();
    assert_eq!(without.status().as_u16(), 401);
    let with = plain
        .get(&url)
        .header("Authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(with.status().as_u16(), 200);
}

/// A method a path does not serve is 405 with the methods it does serve in `Allow` (RFC 9110).
#[tokio::test]
async fn an_unserved_method_is_405_with_allow() {
    let app = TestApp::spawn().await;
    for (method, path, allow) in [
        ("PUT", "/v1/decisions", "GET, HEAD, POST"),
        ("DELETE", "/v1/sessions/s-1/close", "POST"),
        ("PATCH", "/v1/sessions/s-1", "DELETE, GET, HEAD"),
        ("POST", "/healthz", "GET, HEAD"),
    ] {
        let r = app
            .client
            .request(method.parse().unwrap(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405, "{method} {path}");
        assert_eq!(
            r.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "method_not_allowed");
    }
}

/// The spec states the rules the handlers enforce, and a value it rules out is refused with
/// the same code as before.
#[tokio::test]
async fn the_spec_states_the_rules_the_server_enforces() {
    let app = TestApp::spawn().await;
    let spec = served_spec(&app).await;
    let params = spec["paths"]["/v1/handover"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let project = params.iter().find(|p| p["name"] == "project").unwrap();
    assert_eq!(project["schema"]["minLength"], 1);
    assert_eq!(project["schema"]["maxLength"], 128);
    let budget = params
        .iter()
        .find(|p| p["name"] == "budget_tokens")
        .unwrap();
    assert_eq!(budget["schema"]["minimum"], 16.0);
    assert_eq!(budget["schema"]["maximum"], 1000000.0);
    let search = &spec["components"]["schemas"]["SearchRequest"]["properties"];
    assert_eq!(search["project"]["minLength"], 1);
    assert_eq!(search["limit"]["maximum"], 50.0);
    let batch = &spec["components"]["schemas"]["OperationBatch"]["properties"]["operations"];
    assert_eq!(
        (batch["minItems"].clone(), batch["maxItems"].clone()),
        (1.into(), 1000.into())
    );
    let status = &spec["paths"]["/v1/beliefs"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "status")
        .unwrap()["schema"]["enum"];
    assert_eq!(
        *status,
        serde_json::json!(["proposed", "active", "rejected"])
    );

    // What the spec rules out is refused, with today's codes.
    let (code, body) = app.get("/v1/handover?project=").await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (400, Some("missing_field"))
    );
    let (code, body) = app
        .post(
            "/v1/sessions/search",
            &serde_json::json!({"project": app.project, "query": "x", "limit": 51}),
        )
        .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (400, Some("invalid_limit"))
    );
}

#[tokio::test]
async fn the_bookmark_header_is_declared_where_it_is_read_and_answered() {
    let app = TestApp::spawn().await;
    let spec = served_spec(&app).await;
    let declared = &spec["components"]["parameters"]["X-Cairn-Bookmark"];
    assert_eq!(declared["in"], "header");
    assert_eq!(declared["schema"]["maxLength"], 4096);
    let reference = serde_json::json!({"$ref": "#/components/parameters/X-Cairn-Bookmark"});
    let header = serde_json::json!({"$ref": "#/components/headers/X-Cairn-Bookmark"});
    let reads = &spec["paths"]["/v1/sessions/{id}/reconstruction"]["get"];
    assert!(reads["parameters"].as_array().unwrap().contains(&reference));
    assert!(reads["responses"]["200"]["headers"]["X-Cairn-Bookmark"].is_null());
    let writes = &spec["paths"]["/v1/sessions/{id}/operations"]["post"];
    assert!(writes["parameters"]
        .as_array()
        .unwrap()
        .contains(&reference));
    assert_eq!(
        writes["responses"]["201"]["headers"]["X-Cairn-Bookmark"],
        header
    );
    assert!(
        spec["components"]["headers"]["X-Cairn-Bookmark"]["description"]
            .as_str()
            .unwrap()
            .contains("bookmarks")
    );
    app.stop().await;
}
