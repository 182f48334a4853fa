//! The CI knowledge endpoint and `cairn ci`, end to end.

use std::process::{Command, Stdio};

use serde_json::json;

use crate::helpers::{mint_key, TestApp};

async fn seed(app: &crate::helpers::TestApp) -> (String, String) {
    let sid = app.session().await;
    let (_, b) = app.post("/v1/beliefs", &json!({"project": app.project, "content": "the parser must stay allocation-free", "conviction": 0.8})).await;
    let belief = b["id"].as_str().unwrap().to_string();
    app.ops_sync(
        &sid,
        json!([
            {"type": "write", "summary": "rewrote the tokenizer", "files_modified": ["src/parse.rs"], "informs_belief": belief},
            {"type": "todo", "todos": [{"content": "benchmark src/parse.rs after the rewrite", "status": "pending"}, {"content": "update docs", "status": "completed"}]}
        ]),
    )
    .await;
    for (choice, alts) in [
        ("pest", vec!["nom"]),
        ("nom", vec!["pest", "hand-written parser"]),
    ] {
        let (s, _) = app
            .post(
                "/v1/decisions",
                &json!({"project": app.project, "session_id": sid, "subject": "parser library", "choice": choice,
                        "rationale": "speed and error messages", "alternatives": alts, "files": ["src/parse.rs"]}),
            )
            .await;
        assert_eq!(s, 201);
    }
    let (s, _) = app
        .post("/v1/sessions", &json!({"project": app.project}))
        .await;
    assert_eq!(s, 201);
    (sid, belief)
}

#[tokio::test]
async fn knowledge_reports_decisions_beliefs_sessions_and_todos_per_file() {
    let app = TestApp::spawn().await;
    let (sid, belief) = seed(&app).await;
    let (s, r) = app
        .get(&format!(
            "/v1/knowledge?project={}&files=src/parse.rs,./README.md",
            app.project
        ))
        .await;
    assert_eq!(s, 200, "{r}");
    let f = &r["files"][0];
    assert_eq!(f["path"], "src/parse.rs");
    let d = f["decisions"].as_array().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[0]["choice"].as_str(), d[0]["superseded"].as_bool()),
        (Some("nom"), Some(false))
    );
    assert_eq!(d[0]["rejected"], json!(["pest", "hand-written parser"]));
    assert_eq!(d[1]["superseded"], true);
    assert_eq!(f["beliefs"][0]["id"], belief);
    assert!(f["beliefs"][0]["conviction"].as_f64().unwrap() > 0.5);
    assert_eq!(f["sessions"][0]["session_id"], sid);
    assert_eq!(f["open_todos"].as_array().unwrap().len(), 1);
    assert_eq!(r["files"][1]["path"], "README.md");
    assert!(r["files"][1]["decisions"].as_array().unwrap().is_empty());
    let md = r["markdown"].as_str().unwrap();
    assert!(
        md.contains("### `src/parse.rs`") && md.contains("Rejected: pest, hand-written parser."),
        "{md}"
    );
    assert!(md.contains("- [ ] benchmark src/parse.rs"), "{md}");

    // Bounded by the budget, exactly.
    let (_, small) = app
        .get(&format!(
            "/v1/knowledge?project={}&files=src/parse.rs&budget_tokens=40",
            app.project
        ))
        .await;
    assert!(small["markdown_tokens"].as_u64().unwrap() <= 40);
    assert_eq!(small["truncated"], true);
    let text = app
        .client
        .get(app.url(&format!(
            "/v1/knowledge?project={}&files=src/parse.rs&format=markdown",
            app.project
        )))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.starts_with("## What cairn knows"), "{text}");
    for (q, field) in [
        ("files=", "files"),
        ("files=a&format=html", "format"),
        ("files=a&budget_tokens=3", "budget_tokens"),
        // A C1 control character (U+0099), and a tab beside a comma that trimming would drop.
        ("files=K%C2%99s", "files"),
        ("files=a,%09b", "files"),
    ] {
        let (s, b) = app
            .get(&format!("/v1/knowledge?project={}&{q}", app.project))
            .await;
        assert_eq!((s, b["error"]["field"].as_str()), (400, Some(field)), "{q}");
    }
}

async fn cairn(
    args: &[&str],
    key: &str,
    dir: &std::path::Path,
    stdin: &[u8],
) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .current_dir(dir)
        .env("CAIRN_API_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    child.wait_with_output().await.unwrap()
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn cairn_ci_prints_the_report_and_flags_contradictions() {
    let app = TestApp::spawn().await;
    seed(&app).await;
    let key = mint_key(&app.project, "read").await;
    let here = std::env::temp_dir();
    let base = ["ci", "--project", &app.project, "--url", &app.addr];

    let out = cairn(
        &[&base[..], &["--stdin"]].concat(),
        &key,
        &here,
        b"src/parse.rs\nREADME.md\n",
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("**parser library** → nom"), "{text}");

    let out = cairn(
        &[&base[..], &["--stdin", "--format", "json"]].concat(),
        &key,
        &here,
        b"src/parse.rs\n",
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["path"], "src/parse.rs");

    // A branch whose commits bring back the rejected alternative fails the check.
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/parse.rs"), "// v1\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "initial"]);
    let main_sha = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-qb", "feature"]);
    std::fs::write(dir.join("src/parse.rs"), "// v2\n").unwrap();
    git(
        dir,
        &["commit", "-qam", "Rewrite the parser with pest grammars"],
    );
    let args = [&base[..], &["--base", &main_sha]].concat();
    let out = cairn(&args, &key, dir, b"").await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "without the flag it only reports"
    );
    let out = cairn(
        &[&args[..], &["--fail-on-contradiction"]].concat(),
        &key,
        dir,
        b"",
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Possible contradictions") && text.contains("\"pest\""),
        "{text}"
    );
}
