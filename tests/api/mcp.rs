//! MCP at /mcp, driven by the official Python `mcp` SDK (tests/mcp/client.py) over
//! streamable HTTP with the API's keys. `make test` installs the SDK in `.venv-test`; the
//! interpreter is `CAIRN_TEST_PYTHON`, else `.venv-test/bin/python`, else `python3`.

use serde_json::{json, Value};

use crate::helpers::{count, eventually, TestApp};

/// The interpreter with SDK major `major`: `CAIRN_TEST_PYTHON` (1.x) or
/// `CAIRN_TEST_PYTHON_MCP2` (2.x), else `.venv-test` / `.venv-test-mcp2`, else `python3`.
fn python(major: u8) -> String {
    let (var, venv) = match major {
        1 => ("CAIRN_TEST_PYTHON", ".venv-test"),
        _ => ("CAIRN_TEST_PYTHON_MCP2", ".venv-test-mcp2"),
    };
    if let Ok(p) = std::env::var(var) {
        return p;
    }
    let venv = format!("{}/{venv}/bin/python", env!("CARGO_MANIFEST_DIR"));
    if std::path::Path::new(&venv).exists() {
        return venv;
    }
    "python3".to_string()
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_the_tools_with_the_api_key() {
    drive_the_tools(1).await;
}

/// The SDK's current major: its client API changed (`Client`, `streamable_http_client` with an
/// `httpx2` client), the server must not care.
#[tokio::test]
async fn the_mcp_sdk_2_client_lists_and_calls_the_tools_with_the_api_key() {
    drive_the_tools(2).await;
}

async fn drive_the_tools(major: u8) {
    let app = TestApp::spawn().await;
    let key = crate::helpers::mint_key(&app.project, "write").await;
    let session = app.session().await;
    let out = tokio::process::Command::new(python(major))
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py"))
        .arg(app.url("/mcp"))
        .arg(&key)
        .arg(&app.project)
        .arg(&session)
        .output()
        .await
        .expect("run the Python MCP client (pip install mcp)");
    assert!(
        out.status.success(),
        "MCP client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("client output");
    let sdk = seen["sdk"].as_str().unwrap_or_default();
    assert!(
        sdk.starts_with(&format!("{major}.")),
        "wanted MCP SDK {major}.x, ran {sdk}: set CAIRN_TEST_PYTHON{}",
        if major == 1 { "" } else { "_MCP2" }
    );
    assert_eq!(seen["server"], "cairn");
    let tools = seen["tools"].as_object().unwrap();
    for name in [
        "record_decision",
        "remember",
        "list_beliefs",
        "get_handover",
        "reconstruct_session",
        "search_sessions",
        "search_memory",
        "get_context",
        "get_knowledge",
    ] {
        let t = &tools[name];
        assert!(
            t["description"].as_str().unwrap().len() > 60,
            "{name} needs a description for agents"
        );
        assert_eq!(t["schema"]["type"], "object", "{name}");
    }
    assert_eq!(
        tools["record_decision"]["schema"]["required"],
        json!(["subject", "choice", "rationale"])
    );
    assert_eq!(seen["record_decision"]["is_error"], false, "{seen}");
    assert_eq!(seen["remember"]["is_error"], false, "{seen}");
    assert_eq!(seen["bad_remember"]["is_error"], true, "{seen}");
    assert!(
        seen["bad_remember"]["text"]
            .as_str()
            .unwrap()
            .contains("kind"),
        "{seen}"
    );
    assert_eq!(seen["other_project"]["is_error"], true, "{seen}");
    assert!(seen["other_project"]["text"]
        .as_str()
        .unwrap()
        .contains("forbidden"));
    assert_eq!(seen["list_beliefs"]["is_error"], false, "{seen}");
    assert_eq!(seen["get_handover"]["is_error"], false, "{seen}");
    for name in [
        "reconstruct_session",
        "search_sessions",
        "get_context",
        "get_knowledge",
    ] {
        assert_eq!(seen[name]["is_error"], false, "{name}: {seen}");
    }
    let reconstruction: Value =
        serde_json::from_str(seen["reconstruct_session"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(reconstruction["session_id"], json!(session));
    let context: Value =
        serde_json::from_str(seen["get_context"]["text"].as_str().unwrap()).unwrap();
    assert!(context["tokens_used"].as_u64().unwrap() <= 300);
    let knowledge: Value =
        serde_json::from_str(seen["get_knowledge"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(knowledge["files"][0]["path"], "src/http.rs");
    assert_eq!(seen["bad_context"]["is_error"], true, "{seen}");
    assert_eq!(seen["search_memory"]["is_error"], false, "{seen}");
    let found: Value =
        serde_json::from_str(seen["search_memory"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(found["mode"], "fulltext", "{found}");
    assert_eq!(found["operations"][0]["type"], "decision", "{found}");
    assert_eq!(
        found["operations"][0]["session_id"],
        json!(session),
        "{found}"
    );
    assert!(
        found["operations"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("rejected: hyper directly, ureq"),
        "{found}"
    );
    assert_eq!(seen["bad_search_memory"]["is_error"], true, "{seen}");
    assert!(
        seen["bad_search_memory"]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_types"),
        "{seen}"
    );
    assert!(
        seen["get_handover"]["text"]
            .as_str()
            .unwrap()
            .contains("reqwest"),
        "the handover names the decision just recorded: {seen}"
    );

    let project = app.project.clone();
    eventually(60, "decision and memory in Neo4j", || {
        let project = project.clone();
        async move {
            count(
                "MATCH (d:Decision {project: $project, subject: 'http client'}) RETURN count(d) AS n",
                &project,
            )
            .await
                == 1
                && count(
                    "MATCH (m:Memory {project: $project, kind: 'lesson'}) RETURN count(m) AS n",
                    &project,
                )
                .await
                    == 1
        }
    })
    .await;
}

#[tokio::test]
async fn mcp_needs_an_api_key() {
    let app = TestApp::spawn().await;
    let r = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}
