//! `cairn import claude-code`: a multi-session transcript fixture rebuilt into sessions,
//! turns, tool uses and todos with their timestamps; re-import stores nothing new.

use std::path::Path;

use clap::Parser;

use crate::helpers::{eventually, mint_key, spawn_app, store};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code/transcripts"
);

/// Copies the fixture tree into `to`, giving the sessions fresh ids.
fn copy_fixtures(from: &Path, to: &Path, ids: &[(&str, String)]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_fixtures(&p, &dest, ids);
        } else {
            let mut text = std::fs::read_to_string(&p).unwrap();
            for (placeholder, id) in ids {
                text = text.replace(placeholder, id);
            }
            std::fs::write(dest, text).unwrap();
        }
    }
}

async fn import(
    addr: &str,
    key: &str,
    project: &str,
    path: &Path,
) -> cairn::cli::import::ImportReport {
    let path = path.display().to_string();
    let cli = cairn::cli::Cli::try_parse_from([
        "cairn",
        "import",
        "--url",
        addr,
        "--api-key",
        key,
        "--project",
        project,
        "claude-code",
        &path,
    ])
    .expect("import arguments");
    let cairn::cli::Command::Import(args) = cli.command else {
        panic!("not an import")
    };
    cairn::cli::import::import(&args).await.expect("import ran")
}

async fn operations(project: &str, session: &str) -> Vec<(String, String, i64, String)> {
    store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {project: $project, session_id: $session})
                 RETURN o.type AS type, o.status AS status, o.at AS at, o.summary AS summary
                 ORDER BY o.seq",
            )
            .param("project", project)
            .param("session", session),
        )
        .await
        .expect("operations")
        .iter()
        .map(|r| {
            (
                r.get("type").unwrap(),
                r.get("status").unwrap(),
                r.get("at").unwrap(),
                r.get("summary").unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_multi_session_transcript_is_rebuilt_and_reimport_is_idempotent() {
    let app = spawn_app().await;
    let key = mint_key(&app.project, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<(&str, String)> = ["SESSION_A", "SESSION_B", "SESSION_C"]
        .into_iter()
        .map(|p| (p, format!("cc-{}", uuid::Uuid::new_v4())))
        .collect();
    copy_fixtures(Path::new(FIXTURES), dir.path(), &ids);
    let (a, b, c) = (&ids[0].1, &ids[1].1, &ids[2].1);

    let report = import(&app.addr, &key, &app.project, dir.path()).await;
    assert_eq!(report.files, 2, "{report:?}");
    assert_eq!(report.sessions, 3, "{report:?}");
    assert_eq!(report.operations, 11, "{report:?}");
    assert_eq!(report.bad_lines, 2, "{report:?}");
    assert_eq!(report.failed_sessions, 0, "{report:?}");

    eventually(60, "all operations stored", || async {
        operations(&app.project, a).await.len() == 7
            && operations(&app.project, b).await.len() == 2
            && operations(&app.project, c).await.len() == 2
    })
    .await;
    let ops_a = operations(&app.project, a).await;
    let kinds: Vec<&str> = ops_a.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "read",
            "write",
            "todo",
            "tool_call",
            "message"
        ]
    );
    assert_eq!(ops_a[5].1, "failed");
    // 2025-06-01T10:00:04Z, the line of the Read tool use.
    assert_eq!(ops_a[2].2, 1_748_772_004_000);
    let s = app
        .get_when(&format!("/v1/sessions/{a}"), |s| s["status"] == "closed")
        .await;
    assert_eq!(s["summary"], "Coupon codes added to checkout");
    assert_eq!(s["agent"], "claude-code");
    let content: String = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {project: $project, session_id: $session, type: 'message'})
                 RETURN reduce(t = '', c IN collect(o.content) | t + c) AS text",
            )
            .param("project", app.project.as_str())
            .param("session", a.as_str()),
        )
        .await
        .unwrap()[0]
        .get("text")
        .unwrap();
    assert!(content.contains("Add coupon codes"), "{content}");
    assert!(!content.contains("ghp_abcdef"), "token stored: {content}");
    let kinds_c: Vec<String> = operations(&app.project, c)
        .await
        .into_iter()
        .map(|o| o.0)
        .collect();
    assert_eq!(kinds_c, ["message", "write"], "meta lines are skipped");

    let again = import(&app.addr, &key, &app.project, dir.path()).await;
    assert_eq!(again, report);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(operations(&app.project, a).await.len(), 7);
    assert_eq!(operations(&app.project, b).await.len(), 2);
    assert_eq!(operations(&app.project, c).await.len(), 2);
}

#[tokio::test]
async fn import_of_a_missing_path_fails_clearly() {
    let app = spawn_app().await;
    let cli = cairn::cli::Cli::try_parse_from([
        "cairn",
        "import",
        "--url",
        &app.addr,
        "claude-code",
        "/no/such/transcripts",
    ])
    .unwrap();
    let cairn::cli::Command::Import(args) = cli.command else {
        panic!()
    };
    let err = cairn::cli::import::import(&args).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("/no/such/transcripts"),
        "{err:#}"
    );
}

#[tokio::test]
async fn session_ids_that_are_not_url_safe_are_imported() {
    let app = spawn_app().await;
    let key = mint_key(&app.project, "write").await;
    let sid = format!("{} a/b?c=d#e f%20", app.project);
    let lines = [
        serde_json::json!({"type": "summary", "summary": "odd id", "leafUuid": "u1"}),
        serde_json::json!({"type": "user", "sessionId": sid, "uuid": "u1", "cwd": "/r",
                           "timestamp": "2025-06-01T10:00:00Z",
                           "message": {"role": "user", "content": "hello"}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("odd.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let report = import(&app.addr, &key, &app.project, &file).await;
    assert_eq!(
        (report.sessions, report.failed_sessions),
        (1, 0),
        "{report:?}"
    );
    let s = app
        .get_when(
            &format!("/v1/sessions/{}", crate::hostile::seg(&sid)),
            |s| s["status"] == "closed",
        )
        .await;
    assert_eq!(
        (s["status"].as_str(), s["summary"].as_str()),
        (Some("closed"), Some("odd id"))
    );
    eventually(60, "the turn stored", || async {
        operations(&app.project, &sid).await.len() == 1
    })
    .await;
}
