//! `cairn import claude-code`: a multi-session transcript fixture rebuilt into sessions,
//! turns, tool uses and todos with their timestamps; re-import stores nothing new. Genuine
//! transcripts of both layouts (1.0.x inline sidechains, 2.1.x `subagents/` files and a
//! compaction): the main session holds exactly the main thread's tool uses, counted here
//! straight from the JSON, and each subagent is a child session linked to its Task call.

use std::path::Path;

use clap::Parser;

use crate::helpers::{eventually, mint_key, store, TestApp};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code/transcripts"
);

/// Copies the fixture tree into `to`, giving the sessions fresh ids (in names too).
fn copy_fixtures(from: &Path, to: &Path, ids: &[(&str, String)]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let mut name = p.file_name().unwrap().to_string_lossy().into_owned();
        for (placeholder, id) in ids {
            name = name.replace(placeholder, id);
        }
        let dest = to.join(name);
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

/// Rows of `cypher` with `$project` and `$session` bound.
async fn rows(cypher: &str, project: &str, session: &str) -> Vec<neo4rs::Row> {
    store()
        .rows(
            neo4rs::query(cypher)
                .param("project", project)
                .param("session", session),
        )
        .await
        .expect("query")
}

async fn operations(project: &str, session: &str) -> Vec<(String, String, i64, String)> {
    rows(
        "MATCH (o:Operation {project: $project, session_id: $session})
         RETURN o.type AS type, o.status AS status, o.at AS at, o.summary AS summary
         ORDER BY o.seq",
        project,
        session,
    )
    .await
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
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<(&str, String)> = ["SESSION_A", "SESSION_B", "SESSION_C"]
        .into_iter()
        .map(|p| (p, format!("cc-{}", uuid::Uuid::new_v4())))
        .collect();
    copy_fixtures(&Path::new(FIXTURES).join("synthetic"), dir.path(), &ids);
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
    // Dated by the transcript, not by the import: its first line, its last operation, its
    // last line (2025-06-01T10:00:00Z, 10:03:00Z).
    assert_eq!(s["started_at"], 1_748_772_000_000_i64, "{s}");
    assert_eq!(s["closed_at"], 1_748_772_180_000_i64, "{s}");
    let active = s["last_activity_at"].as_i64().unwrap();
    assert!(
        (1_748_772_120_000..=1_748_772_180_000).contains(&active),
        "{s}"
    );
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
    let app = TestApp::spawn().await;
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
    let app = TestApp::spawn().await;
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

/// What a genuine transcript file holds, read straight from its JSON (not through cairn's
/// parser): tool uses of the main thread and of the sidechains, the Task prompts, and the
/// roots of inline sidechains.
#[derive(Debug, Default)]
struct Counted {
    main_tool_uses: usize,
    sidechain_tool_uses: usize,
    task_prompts: Vec<String>,
    sidechain_roots: usize,
}

fn count_file(path: &Path) -> Counted {
    let mut c = Counted::default();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let side = v["isSidechain"] == true;
        if side && v["parentUuid"].is_null() && v["type"] == "user" {
            c.sidechain_roots += 1;
        }
        if v["type"] != "assistant" {
            continue;
        }
        for b in v["message"]["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" {
                if side {
                    c.sidechain_tool_uses += 1;
                } else {
                    c.main_tool_uses += 1;
                    if matches!(b["name"].as_str(), Some("Task" | "Agent")) {
                        // A call Claude Code refused for its input may have no prompt.
                        c.task_prompts
                            .extend(b["input"]["prompt"].as_str().map(str::to_string));
                    }
                }
            }
        }
    }
    c
}

/// Tool-use operations (anything but turns and compaction summaries) of a session.
async fn tool_ops(project: &str, session: &str) -> i64 {
    rows(
        "MATCH (o:Operation {project: $project, session_id: $session})
         WHERE o.tool IS NOT NULL AND o.tool <> 'PostCompact'
         RETURN count(o) AS n",
        project,
        session,
    )
    .await[0]
        .get("n")
        .unwrap()
}

/// The user turns of a session.
async fn user_turns(project: &str, session: &str) -> Vec<String> {
    rows(
        "MATCH (o:Operation {project: $project, session_id: $session, type: 'message', role: 'user'})
         RETURN o.content AS c ORDER BY o.seq",
        project,
        session,
    )
    .await
    .iter()
    .map(|r| r.get("c").unwrap())
    .collect()
}

/// Child sessions of the session `parent`: id, task, agent type, the id of the operation
/// they hang from (through SPAWNED_BY) and how many tool-use operations they hold.
async fn children(project: &str, parent: &str) -> Vec<(String, String, String, String, i64)> {
    rows(
        "MATCH (c:Session {project: $project})-[:CHILD_OF]->(:Session {id: $session})
         OPTIONAL MATCH (c)-[:SPAWNED_BY]->(launch:Operation)
         RETURN c.id AS id, c.task AS task, coalesce(c.agent_type, '') AS agent_type,
                coalesce(launch.id, '') AS launch,
                COUNT { MATCH (o:Operation {session_id: c.id, project: $project})
                        WHERE o.tool IS NOT NULL } AS ops
         ORDER BY id",
        project,
        parent,
    )
    .await
    .iter()
    .map(|r| {
        (
            r.get("id").unwrap(),
            r.get("task").unwrap(),
            r.get("agent_type").unwrap(),
            r.get("launch").unwrap(),
            r.get("ops").unwrap(),
        )
    })
    .collect()
}

/// Imports a genuine fixture directory under a fresh session id (ids are global), with its
/// main session id and the path of the main file in the copy.
async fn import_real(
    app: &crate::helpers::TestApp,
    key: &str,
    fixture: &str,
    session: &str,
) -> (cairn::cli::import::ImportReport, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let fresh = uuid::Uuid::new_v4().to_string();
    copy_fixtures(
        &Path::new(FIXTURES).join(fixture),
        dir.path(),
        &[(session, fresh.clone())],
    );
    let report = import(&app.addr, key, &app.project, dir.path()).await;
    (report, fresh, dir)
}

#[tokio::test]
async fn a_1_0_transcript_keeps_inline_sidechains_in_child_sessions() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";
    let (report, sid, dir) = import_real(&app, &key, "v1.0-inline-sidechains", original).await;
    let counted = count_file(&dir.path().join(format!("{sid}.jsonl")));
    // What the fixture is: 13 main-thread tool uses, two Task subagents inline (one Task
    // call failed validation and launched nothing).
    assert_eq!(
        (counted.main_tool_uses, counted.sidechain_roots),
        (13, 2),
        "{counted:?}"
    );
    assert_eq!(report.failed_sessions, 0, "{report:?}");
    assert_eq!(
        (report.sessions, report.child_sessions),
        (1 + counted.sidechain_roots, counted.sidechain_roots),
        "{report:?}"
    );
    eventually(60, "main-thread tool uses stored", || async {
        tool_ops(&app.project, &sid).await == counted.main_tool_uses as i64
    })
    .await;
    eventually(60, "children stored and linked", || async {
        let c = children(&app.project, &sid).await;
        c.len() == counted.sidechain_roots
            && c.iter().map(|c| c.4).sum::<i64>() == counted.sidechain_tool_uses as i64
            && c.iter().all(|c| !c.3.is_empty())
    })
    .await;
    for (id, task, agent_type, launch, _) in children(&app.project, &sid).await {
        assert!(id.starts_with(&format!("{sid}:agent-")), "{id}");
        assert!(counted.task_prompts.contains(&task), "{task}");
        assert_eq!(agent_type, "general-purpose");
        assert!(launch.starts_with(&format!("{sid}/toolu_")), "{launch}");
        assert!(user_turns(&app.project, &id).await.is_empty());
    }
    let turns = user_turns(&app.project, &sid).await;
    assert!(
        turns.iter().all(|t| !t.contains("<command-")
            && !counted.task_prompts.iter().any(|p| t.trim() == p.trim())),
        "{turns:?}"
    );
    // Closed on import without a summary line: summed up from its last turn and todos.
    let s = app
        .get_when(&format!("/v1/sessions/{sid}"), |s| s["status"] == "closed")
        .await;
    let summary = s["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("Todos: 4 of 4 completed"), "{summary}");
    assert!(summary.starts_with("CLAUDE.md"), "{summary}");
}

/// A genuine subagent reply of 3,473 characters states its key finding in its closing notes,
/// past the first 2,000 ("No `additionalSystemPrompt` field exists"): the reply is found by
/// that word, its snippet cut around it.
#[tokio::test]
async fn a_long_real_reply_is_found_by_what_it_says_last() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "258c7280-ae70-4798-800f-63464d01a85d";
    let (report, sid, _dir) = import_real(&app, &key, "v2.1-subagents-compaction", original).await;
    assert_eq!(report.failed_sessions, 0, "{report:?}");
    let child = format!("{sid}:agent-a881341");
    let body = serde_json::json!({"project": app.project, "query": "additionalSystemPrompt exists",
                                  "types": ["message"], "limit": 10});
    let is_reply =
        |h: &&serde_json::Value| h["session_id"] == child.as_str() && h["role"] == "assistant";
    let answer =
        crate::turns::search_until(&app, body, |hits| hits.iter().any(|h| is_reply(&h))).await;
    let hits = answer["operations"].as_array().unwrap();
    let reply = hits
        .iter()
        .find(is_reply)
        .unwrap_or_else(|| panic!("the subagent's reply was not found: {answer}"));
    let snippet = reply["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("No `additionalSystemPrompt` field exists"),
        "{snippet}"
    );
    assert!(
        snippet.starts_with('…'),
        "cut around the match, not the reply's start: {snippet}"
    );
}

#[tokio::test]
async fn a_2_1_session_with_subagents_and_a_compaction() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "258c7280-ae70-4798-800f-63464d01a85d";
    let (report, sid, dir) = import_real(&app, &key, "v2.1-subagents-compaction", original).await;
    let main = count_file(&dir.path().join(format!("{sid}.jsonl")));
    let agent = count_file(&dir.path().join(&sid).join("subagents/agent-a881341.jsonl"));
    assert_eq!(main.task_prompts.len(), 1, "{main:?}");
    assert_eq!((report.files, report.failed_sessions), (3, 0), "{report:?}");
    // The compaction run is no session: the main one and one subagent.
    assert_eq!(
        (report.sessions, report.child_sessions),
        (2, 1),
        "{report:?}"
    );
    let compaction_lines = std::fs::read_to_string(
        dir.path()
            .join(&sid)
            .join("subagents/agent-acompact-fffbd0.jsonl"),
    )
    .unwrap()
    .lines()
    .count();
    assert_eq!(
        report.skipped["compaction-run"], compaction_lines,
        "{report:?}"
    );
    assert!(report.skipped["progress"] > 0 && report.skipped["file-history-snapshot"] > 0);
    eventually(60, "main-thread tool uses stored", || async {
        tool_ops(&app.project, &sid).await == main.main_tool_uses as i64
    })
    .await;
    let child = crate::helpers::settle(
        60,
        || async { children(&app.project, &sid).await },
        |c| c.len() == 1 && c[0].4 == agent.sidechain_tool_uses as i64,
    )
    .await;
    assert_eq!(child.len(), 1, "{child:?}");
    let (id, task, agent_type, launch, ops) = &child[0];
    assert_eq!(id, &format!("{sid}:agent-a881341"));
    assert_eq!(task, &main.task_prompts[0]);
    assert_eq!(agent_type, "claude-code-guide");
    assert_eq!(launch, &format!("{sid}/toolu_01VmaERAwhb19LGUwu9GenaK"));
    assert_eq!(*ops, agent.sidechain_tool_uses as i64);
    assert!(agent.sidechain_tool_uses > 0);
    assert_eq!(
        crate::helpers::count(
            "MATCH (s:Session {project: $project}) WHERE s.id CONTAINS 'acompact' RETURN count(s) AS n",
            &app.project
        )
        .await,
        0
    );
    // The compaction summary is kept as such, never as a user turn, and sums the session up.
    let turns = user_turns(&app.project, &sid).await;
    assert!(
        turns.iter().all(|t| !t.contains("being continued")
            && !t.starts_with("<task-notification>")
            && !t.contains(&main.task_prompts[0])),
        "{turns:?}"
    );
    assert!(turns
        .iter()
        .any(|t| t == "new beads for the epic were added. tackle them"));
    let s = app
        .get_when(&format!("/v1/sessions/{sid}"), |s| s["status"] == "closed")
        .await;
    let summary = s["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("1. Primary Request and Intent"),
        "{summary}"
    );
    assert_eq!(s["parent"], serde_json::Value::Null);
    // The child is closed too, summed up from its last turn (the subagent's report).
    let c = app
        .get_when(&format!("/v1/sessions/{id}"), |s| s["summary"].is_string())
        .await;
    assert_eq!(c["parent"].as_str(), Some(sid.as_str()), "{c}");
    assert_eq!(c["status"], "closed", "{c}");
    assert_eq!(
        crate::helpers::count(
            "MATCH (s:Session {project: $project}) WHERE s.summary IS NULL RETURN count(s) AS n",
            &app.project
        )
        .await,
        0,
        "every imported session has a summary"
    );

    // Naming the main file alone brings its subagents along; nothing new is stored.
    let again = import(
        &app.addr,
        &key,
        &app.project,
        &dir.path().join(format!("{sid}.jsonl")),
    )
    .await;
    assert_eq!(
        (again.files, again.sessions, again.child_sessions),
        (3, 2, 1)
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        tool_ops(&app.project, &sid).await,
        main.main_tool_uses as i64
    );
    assert_eq!(
        tool_ops(&app.project, id).await,
        agent.sidechain_tool_uses as i64
    );
}

/// A long reply of a genuine transcript (the subagent's answer on SessionStart hooks, 3,473
/// characters), found for a detail near its end, is shown around that detail in a small task
/// context: its label kept, its start left out, the budget kept.
#[tokio::test]
async fn a_small_task_context_shows_the_part_of_a_long_real_reply_that_answers() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "258c7280-ae70-4798-800f-63464d01a85d";
    let (_, sid, _dir) = import_real(&app, &key, "v2.1-subagents-compaction", original).await;
    let task = "Is there an additionalSystemPrompt field for SessionStart hooks?";
    let child = format!("{sid}:agent-a881341");
    eventually(60, "turn search finds the subagent's reply", || async {
        let (_, found) = app
            .post(
                "/v1/search",
                &serde_json::json!({"project": app.project, "query": task, "types": ["message"]}),
            )
            .await;
        found["operations"]
            .as_array()
            .is_some_and(|hits| hits.iter().any(|h| h["session_id"] == child.as_str()))
    })
    .await;

    let budget = 1000;
    let (status, ctx) = app
        .post(
            "/v1/context",
            &serde_json::json!({"project": app.project, "task": task, "budget_tokens": budget}),
        )
        .await;
    assert_eq!(status, 200, "{ctx}");
    assert!(ctx["tokens_used"].as_u64().unwrap() <= budget, "{ctx}");
    let text = ctx["text"].as_str().unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("No `additionalSystemPrompt` field exists"))
        .unwrap_or_else(|| panic!("the answering part of the reply: {text}"));
    assert!(line.starts_with("Assistant: … "), "{line}");
    assert!(!line.contains("Based on the official"), "{line}");
}

/// In a genuine session, what a tool call answered and what an edit wrote are found: the run
/// of a test that failed for want of a `secret_key_base` by the error it printed, the edit of
/// `pane_list_live.ex` by the `sync_indicator` it added. A task context shows the failure
/// after its command. A text stored in an older form (without its outcome) is made again by
/// the texts pass.
#[tokio::test]
async fn a_tool_call_is_found_by_what_it_answered_and_an_edit_by_what_it_wrote() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "258c7280-ae70-4798-800f-63464d01a85d";
    let (report, sid, _dir) = import_real(&app, &key, "v2.1-subagents-compaction", original).await;
    assert_eq!(report.failed_sessions, 0, "{report:?}");
    let search = |query: &str, kind: &str| serde_json::json!({"project": app.project, "query": query, "types": [kind], "limit": 5});
    let failed_run = |h: &serde_json::Value| {
        h["session_id"] == sid.as_str()
            && h["snippet"]
                .as_str()
                .is_some_and(|s| s.contains("secret_key_base"))
    };
    let query = "no secret key base configuration found";
    let answer = crate::turns::search_until(&app, search(query, "tool_call"), |hits| {
        hits.iter().any(failed_run)
    })
    .await;
    let run = answer["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| failed_run(h))
        .unwrap_or_else(|| panic!("the failed test run: {answer}"))["operation_id"]
        .clone();
    let answer = crate::turns::search_until(&app, search("sync indicator", "write"), |hits| {
        !hits.is_empty()
    })
    .await;
    let edit = &answer["operations"][0];
    assert!(
        edit["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("<.sync_indicator status=")),
        "{answer}"
    );
    let edited = store()
        .rows(
            neo4rs::query("MATCH (o:Operation {project: $project, id: $id}) RETURN o.target AS t")
                .param("project", app.project.as_str())
                .param("id", edit["operation_id"].as_str().unwrap()),
        )
        .await
        .expect("the edit");
    let target: String = edited[0].get("t").expect("its file");
    assert!(
        target.ends_with("lib/spotter_web/live/pane_list_live.ex"),
        "{target}"
    );

    let task = "why did the project review live view test fail with no secret_key_base?";
    let (status, ctx) = app
        .post(
            "/v1/context",
            &serde_json::json!({"project": app.project, "task": task, "budget_tokens": 1500}),
        )
        .await;
    assert_eq!(status, 200, "{ctx}");
    assert!(ctx["tokens_used"].as_u64().unwrap() <= 1500, "{ctx}");
    let text = ctx["text"].as_str().unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("[tool_call]")
            && l.contains(" → ")
            && l.contains("secret_key_base")),
        "the failed run with what it printed: {text}"
    );

    // As an older cairn stored it: the tool call's text without what it answered.
    store()
        .run(
            neo4rs::query(
                "MATCH (o:Operation {project: $project, id: $id}) SET o.search_text = o.tool",
            )
            .param("project", app.project.as_str())
            .param("id", run.as_str().unwrap()),
        )
        .await
        .expect("older text");
    let gone = |answer: &serde_json::Value| {
        !answer["operations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["operation_id"] == run)
    };
    let answer = crate::turns::search_until(&app, search(query, "tool_call"), |hits| {
        !hits.iter().any(|h| h["operation_id"] == run)
    })
    .await;
    assert!(gone(&answer), "{answer}");
    let mut pass = cairn::recall::turn_index::Retexting::pass(0);
    while !pass.done {
        pass.step(&store()).await.expect("texts step");
    }
    let answer = crate::turns::search_until(&app, search(query, "tool_call"), |hits| {
        hits.iter().any(|h| h["operation_id"] == run)
    })
    .await;
    assert!(!gone(&answer), "{answer}");
}

/// What each tool call of a genuine session answered, as the import stored it.
async fn answers(project: &str) -> Vec<(String, String, Option<String>)> {
    let rows = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {project: $project, type: 'tool_call'})
                 RETURN o.id AS id, o.summary AS summary, o.context AS context",
            )
            .param("project", project),
        )
        .await
        .expect("the tool calls");
    rows.iter()
        .map(|r| {
            let context: Option<String> = r.get("context").ok();
            let response = context
                .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
                .and_then(|c| c["response"].as_str().map(str::to_string));
            (
                r.get("id").expect("id"),
                r.get("summary").unwrap_or_default(),
                response,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_tool_call_answers_in_words_not_in_json() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "258c7280-ae70-4798-800f-63464d01a85d";
    let (report, sid, _dir) = import_real(&app, &key, "v2.1-subagents-compaction", original).await;
    assert_eq!(report.failed_sessions, 0, "{report:?}");
    let calls = answers(&app.project).await;
    let of = |tool_use: &str| {
        calls
            .iter()
            .find(|(id, _, _)| *id == format!("{sid}/{tool_use}"))
            .unwrap_or_else(|| panic!("{tool_use} among {calls:?}"))
    };
    // Three commands printed nothing: they answer nothing, not their result's JSON.
    for quiet in [
        "toolu_016hNPWCQWeHiC3oxj9YPfg3",
        "toolu_01TM4RVRqKNw4MPnmynB4uqT",
        "toolu_01YbnzyytLg4HmzHoT4pHQfD",
    ] {
        assert_eq!(of(quiet).2, None, "{:?}", of(quiet));
    }
    // The subagent answers with its report.
    let task = of("toolu_01VmaERAwhb19LGUwu9GenaK");
    assert!(
        task.2.as_deref().is_some_and(|r| r.starts_with(
            "Based on the official Claude Code hooks documentation, here's what you need to know"
        )),
        "{task:?}"
    );
    let json = calls
        .iter()
        .filter(|(_, _, r)| r.as_deref().is_some_and(|r| r.starts_with("{\"")))
        .count();
    assert_eq!(json, 0, "{calls:?}");

    // A failed call says its error without Claude Code's markers.
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "write").await;
    let original = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";
    let (report, _sid, _dir) = import_real(&app, &key, "v1.0-inline-sidechains", original).await;
    assert_eq!(report.failed_sessions, 0, "{report:?}");
    let calls = answers(&app.project).await;
    assert!(
        calls.iter().any(|(_, s, r)| s
            == "Task failed: InputValidationError: Task failed due to the following issue:"
            && r.as_deref()
                .is_some_and(|r| r.contains("The required parameter `prompt` is missing"))),
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|(_, s, r)| s.contains("tool_use_error")
            || r.as_deref().is_some_and(|r| r.contains("tool_use_error"))),
        "{calls:?}"
    );
}
