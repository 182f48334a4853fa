//! Claude Code hooks: every event shape through `POST /v1/hooks/claude-code`, redaction, the
//! SessionStart context, and the command hook's spool (cairn down, then up: exactly once, in
//! order).

use std::{path::Path, time::Duration};

use clap::Parser;

use serde_json::{json, Value};

use crate::helpers::{eventually, settle, spawn_app, store, TestApp};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code/hooks"
);

/// The fixture events in file order, with `SESSION_ID` replaced.
fn fixture_events(session: &str) -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(FIXTURES)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p)
                .expect("fixture")
                .replace("SESSION_ID", session);
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).expect("fixture json"))
        })
        .collect()
}

/// Rows of `cypher` with `$project` and `$session` bound.
async fn query(cypher: &str, project: &str, session: &str) -> Vec<neo4rs::Row> {
    store()
        .rows(
            neo4rs::query(cypher)
                .param("project", project)
                .param("session", session),
        )
        .await
        .expect("query")
}

async fn op_types(app: &TestApp, session: &str) -> Vec<(String, String, String)> {
    query(
        "MATCH (o:Operation {project: $project, session_id: $session})
         RETURN o.type AS type, o.id AS id, o.status AS status ORDER BY o.seq",
        &app.project,
        session,
    )
    .await
    .iter()
    .map(|r| {
        (
            r.get::<String>("type").unwrap(),
            r.get::<String>("id").unwrap(),
            r.get::<String>("status").unwrap(),
        )
    })
    .collect()
}

async fn stored_text(app: &TestApp, session: &str) -> String {
    query(
        "MATCH (o:Operation {project: $project, session_id: $session})
         RETURN coalesce(o.content, '') + '\n' + o.summary + '\n' + coalesce(o.target, '') + '\n'
                + coalesce(o.context, '') + '\n' + coalesce(o.todos, '') AS text",
        &app.project,
        session,
    )
    .await
    .iter()
    .map(|r| r.get::<String>("text").unwrap())
    .collect::<Vec<_>>()
    .join("\n")
}

#[tokio::test]
async fn every_event_shape_is_captured_through_the_http_hook() {
    let app = spawn_app().await;
    let session = format!("cc-{}", uuid::Uuid::new_v4());
    for (name, event) in fixture_events(&session) {
        let (status, body) = app.post("/v1/hooks/claude-code", &event).await;
        assert_eq!(status, 200, "{name}: {body}");
        if name.contains("session-start") {
            assert!(body.is_object(), "{name}: {body}");
        } else {
            assert_eq!(body, json!({}), "{name}");
        }
    }
    eventually(60, "18 operations stored", || async {
        op_types(&app, &session).await.len() >= 18
    })
    .await;
    let types = op_types(&app, &session).await;
    let count = |t: &str| types.iter().filter(|(k, _, _)| k == t).count();
    let expected = [
        ("read", 1),
        ("write", 4),
        ("search", 4),
        ("todo", 1),
        ("tool_call", 5),
        ("message", 3),
    ];
    for (t, n) in expected {
        assert_eq!(count(t), n, "{t} in {types:?}");
    }
    assert_eq!(types.len(), 18, "{types:?}");
    // Pre- and PostToolUse of one call are one node, keyed by tool_use_id.
    assert_eq!(
        types
            .iter()
            .filter(|(_, id, _)| id.ends_with("/toolu_01read"))
            .count(),
        1
    );
    let failed: Vec<_> = types.iter().filter(|(_, _, s)| s == "failed").collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, format!("{session}/toolu_14fail"));

    let s = app
        .get_when(&format!("/v1/sessions/{session}"), |s| {
            s["status"] == "closed"
        })
        .await;
    assert_eq!(s["agent"], "claude-code");
    assert_eq!(s["project"], app.project.as_str());

    let files = query(
        "MATCH (o:Operation {project: $project, session_id: $session})-[t:TOUCHED {mode: 'write'}]->(f:File)
         RETURN collect(DISTINCT f.path) AS paths",
        &app.project,
        &session,
    )
    .await;
    let mut paths: Vec<String> = files[0].get("paths").unwrap();
    paths.sort();
    assert_eq!(
        paths,
        vec![
            "notes/pricing.ipynb",
            "src/cart.rs",
            "src/checkout.rs",
            "src/discount.rs"
        ]
    );
    let todos = query(
        "MATCH (o:Operation {project: $project, session_id: $session, type: 'todo'}) RETURN o.todos AS todos",
        &app.project,
        &session,
    )
    .await;
    let todos: Value = serde_json::from_str(&todos[0].get::<String>("todos").unwrap()).unwrap();
    assert_eq!(todos.as_array().unwrap().len(), 3);
    assert_eq!(todos[1]["status"], "in_progress");
}

#[tokio::test]
async fn secrets_and_private_spans_never_reach_neo4j_and_responses_are_bounded() {
    let app = spawn_app().await;
    let session = format!("cc-{}", uuid::Uuid::new_v4());
    for (name, event) in fixture_events(&session) {
        if name.contains("prompt") || name.contains("bash") || name.contains("post-tool-use-read") {
            let (status, body) = app.post("/v1/hooks/claude-code", &event).await;
            assert_eq!(status, 200, "{name}: {body}");
        }
    }
    eventually(60, "three operations stored", || async {
        op_types(&app, &session).await.len() == 3
    })
    .await;
    let text = stored_text(&app, &session).await;
    assert!(text.contains("discount code field"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    for secret in [
        "my card is 4111",
        "sk_live_abcdefghijklmnopqrstuvwx",
        "eyJhbGciOiJIUzI1NiJ9",
        "AKIAABCDEFGHIJKLMNOP",
        "MIIEowIBAAKCAQEA1234",
    ] {
        assert!(!text.contains(secret), "{secret} stored: {text}");
    }
    // The 400-line Read response is summarised, not stored.
    assert!(text.matches("fn checkout() {}").count() == 0, "{text}");
    assert!(text.contains("400 lines"), "{text}");
}

#[tokio::test]
async fn bad_hook_input_is_a_clear_4xx() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/hooks/claude-code",
            &json!({"hook_event_name": "Stop", "cwd": "/x"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["field"], "session_id");
    let (status, body) = app.post("/v1/hooks/claude-code", &json!([1, 2])).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_event");
    let (status, body) = app
        .post(
            "/v1/hooks/claude-code?budget_tokens=999999",
            &json!({"hook_event_name": "SessionStart", "session_id": "x"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["field"], "budget_tokens");
    // Another project than the key's is forbidden.
    let (status, _) = app
        .post(
            "/v1/hooks/claude-code?project=someone-else",
            &json!({"hook_event_name": "SessionStart", "session_id": "x"}),
        )
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn session_start_answers_with_the_last_sessions_handover_within_budget() {
    let app = spawn_app().await;
    let previous = app.session().await;
    app.ops_sync(
        &previous,
        json!([{"type": "todo", "todos": [
            {"content": "ship the coupon API", "status": "in_progress"},
            {"content": "done thing", "status": "completed"}]}]),
    )
    .await;
    let (status, body) = app
        .post(
            &format!("/v1/sessions/{previous}/close"),
            &json!({"summary": "Moved pricing to the Money type.", "next_steps": ["migrate invoices"]}),
        )
        .await;
    assert!(status == 201 || status == 202, "{body}");
    let (status, body) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "subject": "money type", "choice": "integer cents", "rationale": "no float rounding"}),
        )
        .await;
    assert!(status == 201 || status == 202, "{body}");
    let start = |budget: u32| {
        let session = format!("cc-{}", uuid::Uuid::new_v4());
        let app = &app;
        async move {
            app.post(
                &format!("/v1/hooks/claude-code?budget_tokens={budget}"),
                &json!({"hook_event_name": "SessionStart", "session_id": session, "source": "startup", "cwd": "/tmp"}),
            )
            .await
        }
    };
    let body = settle(
        60,
        || async {
            let (status, b) = start(1500).await;
            assert_eq!(status, 200, "{b}");
            b
        },
        |b| {
            b["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .is_some_and(|t| t.contains("integer cents"))
        },
    )
    .await;
    let out = &body["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "SessionStart");
    let text = out["additionalContext"].as_str().unwrap();
    for want in [
        "Moved pricing to the Money type.",
        "migrate invoices",
        "ship the coupon API",
        previous.as_str(),
    ] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    assert!(!text.contains("done thing"), "{text}");
    let (_, small) = start(12).await;
    let small = small["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    let n = cairn::domain::tokens::count(cairn::config::Encoding::O200kBase, &small);
    assert!(n <= 12 && n > 0, "{n} tokens: {small}");
}

/// Runs `cairn hook <args>` (parsed as the binary parses them) with `stdin`; returns
/// (exit code, stdout).
async fn run_hook(
    url: &str,
    key: &str,
    project: &str,
    spool: &Path,
    args: &[&str],
    stdin: &[u8],
) -> (i32, String) {
    let mut argv = vec!["cairn", "hook"];
    let spool = spool.display().to_string();
    argv.extend_from_slice(&[
        "--url",
        url,
        "--api-key",
        key,
        "--project",
        project,
        "--spool-dir",
        &spool,
    ]);
    argv.extend_from_slice(args);
    if args[0] == "claude-code" {
        // Generous deadline: these tests check behaviour, not speed, on a loaded machine.
        argv.extend_from_slice(&["--deadline-ms", "30000"]);
    }
    let cli = cairn::cli::Cli::try_parse_from(&argv).expect("hook arguments");
    let cairn::cli::Command::Hook(hook) = cli.command else {
        panic!("not a hook command")
    };
    let mut out = Vec::new();
    let code = cairn::cli::hook::invoke(hook, stdin, &mut out)
        .await
        .expect("hook ran");
    (code, String::from_utf8_lossy(&out).into_owned())
}

fn spooled(spool: &Path) -> usize {
    std::fs::read_dir(spool)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".hook.json"))
                .count()
        })
        .unwrap_or(0)
}

fn prompt(session: &str, text: &str) -> Vec<u8> {
    json!({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": "/tmp", "prompt": text})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn command_hook_spools_while_cairn_is_down_and_sends_exactly_once_in_order() {
    let app = spawn_app().await;
    let key = crate::helpers::mint_key(&app.project, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("hook-spool");
    let session = format!("cc-{}", uuid::Uuid::new_v4());
    // Nothing listens on this port: cairn is down.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    for i in 1..=3 {
        let (code, out) = run_hook(
            &down,
            &key,
            &app.project,
            &spool,
            &["claude-code"],
            &prompt(&session, &format!("prompt {i}")),
        )
        .await;
        assert_eq!(code, 0);
        assert_eq!(out, "");
    }
    assert_eq!(spooled(&spool), 3);
    // A copy of the first spooled event, to replay after it was sent (a hook killed between
    // cairn's acknowledgement and the delete).
    let first = {
        let mut files: Vec<_> = std::fs::read_dir(&spool)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".hook.json"))
            .collect();
        files.sort();
        (files[0].clone(), std::fs::read(&files[0]).unwrap())
    };

    // cairn is up: the next invocation sends the spooled events first, then its own.
    let (code, _) = run_hook(
        &app.addr,
        &key,
        &app.project,
        &spool,
        &["claude-code"],
        &prompt(&session, "prompt 4"),
    )
    .await;
    assert_eq!(code, 0);
    assert_eq!(spooled(&spool), 0);

    std::fs::write(&first.0, &first.1).unwrap();
    let (code, out) = run_hook(&app.addr, &key, &app.project, &spool, &["flush"], b"").await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("sent 1"), "{out}");
    let (code, out) = run_hook(&app.addr, &key, &app.project, &spool, &["flush"], b"").await;
    assert_eq!(code, 0);
    assert!(out.contains("sent 0"), "{out}");

    let contents = || async {
        query(
            "MATCH (o:Operation {project: $project, session_id: $session})
             RETURN o.content AS c ORDER BY o.seq",
            &app.project,
            &session,
        )
        .await
        .iter()
        .map(|r| r.get::<String>("c").unwrap())
        .collect::<Vec<_>>()
    };
    eventually(60, "four prompts stored", || async {
        contents().await.len() >= 4
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        contents().await,
        vec!["prompt 1", "prompt 2", "prompt 3", "prompt 4"]
    );
}

#[tokio::test]
async fn command_hook_prints_the_session_start_context_and_flush_reports_what_is_left() {
    let app = spawn_app().await;
    let key = crate::helpers::mint_key(&app.project, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("hook-spool");
    let previous = app.session().await;
    app.post(
        &format!("/v1/sessions/{previous}/close"),
        &json!({"summary": "Left the parser half done."}),
    )
    .await;
    let start = json!({"hook_event_name": "SessionStart", "session_id": format!("cc-{}", uuid::Uuid::new_v4()), "cwd": "/tmp", "source": "startup"});
    let claude_code = |stdin: Vec<u8>| {
        let (app, key, spool) = (&app, &key, &spool);
        async move {
            run_hook(
                &app.addr,
                key,
                &app.project,
                spool,
                &["claude-code"],
                &stdin,
            )
            .await
        }
    };
    let out = settle(
        60,
        || async {
            let (code, out) = claude_code(start.to_string().into_bytes()).await;
            assert_eq!(code, 0);
            out
        },
        |out| out.contains("parser half done"),
    )
    .await;
    let reply: Value = serde_json::from_str(out.trim()).expect("stdout is JSON");
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");

    // Garbage on stdin: still exit 0, nothing printed, nothing spooled.
    let (code, out) = claude_code(b"not json".to_vec()).await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(spooled(&spool), 0);

    // cairn down: flush keeps the events and says so.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    run_hook(
        &down,
        &key,
        &app.project,
        &spool,
        &["claude-code"],
        &prompt("cc-x", "p"),
    )
    .await;
    let (code, out) = run_hook(&down, &key, &app.project, &spool, &["flush"], b"").await;
    assert_eq!(code, 1);
    assert!(out.contains("1 left"), "{out}");
}

#[tokio::test]
async fn setup_merges_into_an_existing_settings_file_and_print_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    let existing = json!({
        "model": "opus",
        "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "cargo fmt"}]}]}
    });
    std::fs::write(claude.join("settings.json"), existing.to_string()).unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        json!({"mcpServers": {"other": {"command": "x"}}}).to_string(),
    )
    .unwrap();
    let project_dir = dir.path().display().to_string();
    let setup = |extra: &'static [&'static str]| {
        let mut argv = vec![
            "cairn",
            "setup",
            "claude-code",
            "--project-dir",
            project_dir.as_str(),
            "--url",
            "http://127.0.0.1:9999",
        ];
        argv.extend_from_slice(extra);
        let cli = cairn::cli::Cli::try_parse_from(argv).expect("setup arguments");
        let cairn::cli::Command::Setup(args) = cli.command else {
            panic!("not setup")
        };
        let mut out = Vec::new();
        let code = cairn::cli::setup::run(args, &mut out).expect("setup ran");
        (code, String::from_utf8(out).unwrap())
    };
    let (code, printed) = setup(&["--print"]);
    assert_eq!(code, 0);
    assert!(printed.contains("cairn hook claude-code"), "{printed}");
    let untouched: Value =
        serde_json::from_str(&std::fs::read_to_string(claude.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(untouched, existing);

    for _ in 0..2 {
        let (code, _) = setup(&[]);
        assert_eq!(code, 0);
    }
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(claude.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["model"], "opus");
    let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post.len(), 2, "{settings}");
    assert_eq!(post[0]["hooks"][0]["command"], "cargo fmt");
    for event in cairn::claude::settings::EVENTS {
        let n = settings["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["hooks"][0]["command"] == "cairn hook claude-code")
            .count();
        assert_eq!(n, 1, "{event}: {settings}");
    }
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap())
            .unwrap();
    assert_eq!(mcp["mcpServers"]["other"]["command"], "x");
    assert_eq!(
        mcp["mcpServers"]["cairn"]["url"],
        "http://127.0.0.1:9999/mcp"
    );

    // A broken settings file is reported and left alone.
    std::fs::write(claude.join("settings.json"), "{ not json").unwrap();
    let cli = cairn::cli::Cli::try_parse_from([
        "cairn",
        "setup",
        "claude-code",
        "--project-dir",
        &project_dir,
    ])
    .unwrap();
    let cairn::cli::Command::Setup(args) = cli.command else {
        panic!()
    };
    assert!(cairn::cli::setup::run(args, &mut Vec::new()).is_err());
    assert_eq!(
        std::fs::read_to_string(claude.join("settings.json")).unwrap(),
        "{ not json"
    );
}
