//! The read path against the real Neo4j: reconstruction (filters, cuts, unfinished work,
//! narrative), the sliding window, and token-budgeted context (newest-first selection with
//! chronological presentation, at least one item, file dedup, exclusion warnings, long-term
//! memory) with a property test of the budget guarantee over random graphs and budgets.

use cairn::config::Encoding;
use cairn::domain::tokens;
use proptest::{
    prelude::*,
    strategy::ValueTree,
    test_runner::{Config, TestRunner},
};
use serde_json::{json, Value};

use crate::helpers::{eventually, store, TestApp};

/// Starts a session with `task`, continuing `continues`; returns its id.
pub async fn start(app: &TestApp, task: &str, continues: Option<&str>) -> String {
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "agent": "test", "task": task, "continues": continues}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    b["session_id"].as_str().unwrap().to_string()
}

async fn close(app: &TestApp, sid: &str, summary: &str, next: Value) {
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": summary, "next_steps": next}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
}

/// What `POST /v1/search` answers for `body`.
async fn searched(app: &TestApp, body: Value) -> Value {
    app.post("/v1/search", &body).await.1
}

async fn context(app: &TestApp, body: Value) -> Value {
    let (s, b) = app.post("/v1/context", &body).await;
    assert_eq!(s, 200, "{b}");
    check_guarantee(&b);
    b
}

/// `tokens_used` is the token count of `text` in the encoding, and within the budget.
fn check_guarantee(b: &Value) {
    let enc = match b["encoding"].as_str().unwrap() {
        "cl100k_base" => Encoding::Cl100kBase,
        _ => Encoding::O200kBase,
    };
    let text = b["text"].as_str().unwrap();
    let used = b["tokens_used"].as_u64().unwrap();
    assert_eq!(used as usize, tokens::count(enc, text), "{b}");
    assert!(used <= b["budget_tokens"].as_u64().unwrap(), "{b}");
}

fn texts(ops: &Value) -> Vec<String> {
    ops.as_array()
        .unwrap()
        .iter()
        .map(|o| o["type"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn reconstruction_filters_cuts_and_narrates() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (_, belief) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "the parser is fragile"}),
        )
        .await;
    let bid = belief["id"].as_str().unwrap();
    app.ops_sync(
        &sid,
        json!([
            {"type": "read", "target": "src/parser.rs", "summary": "read the parser", "files_read": ["src/parser.rs"]},
            {"type": "search", "summary": "searched for tokenize", "target": "tokenize"},
            {"type": "tool_call", "tool": "Bash", "summary": "ran the tests: 3 failed", "status": "failed",
             "informs_belief": bid},
            {"type": "write", "summary": "fixed the tokenizer", "files_modified": ["src/parser.rs"],
             "informs_belief": bid, "effect": "contradicts"},
            {"type": "read", "summary": "read the lexer", "files_read": ["src/lexer.rs"]},
            {"type": "todo", "todos": [{"content": "fix tokenizer", "status": "completed"},
                                        {"content": "add fuzz tests", "status": "pending"}]},
        ]),
    )
    .await;
    let (s, d) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": sid, "subject": "lexer strategy",
                    "choice": "hand-written", "rationale": "clearer errors",
                    "affects_beliefs": [bid]}),
        )
        .await;
    assert_eq!(s, 201, "{d}");
    close(&app, &sid, "parser fixed", json!(["profile the lexer"])).await;

    let (s, r) = app.get(&format!("/v1/sessions/{sid}/reconstruction")).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["narrative_source"], "graph");
    assert_eq!(r["operations_total"], 7);
    assert_eq!(
        texts(&r["operations"]),
        vec![
            "read",
            "search",
            "tool_call",
            "write",
            "read",
            "todo",
            "decision"
        ]
    );
    let seqs: Vec<i64> = r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(r["decisions"][0]["choice"], "hand-written");
    let narrative = r["narrative"].as_str().unwrap();
    for part in [
        "src/parser.rs",
        "src/lexer.rs",
        "lexer strategy → hand-written",
        "It wrote 1 file(s): src/parser.rs",
        "Left open: add fuzz tests; profile the lexer",
        "1 operation(s) failed",
    ] {
        assert!(narrative.contains(part), "missing {part:?} in {narrative}");
    }
    assert_eq!(
        r["unfinished"],
        json!([
            {"content": "add fuzz tests", "source": "todo", "status": "pending"},
            {"content": "profile the lexer", "source": "next_step"}
        ])
    );
    let b = &r["beliefs_affected"][0];
    assert_eq!(b["id"], bid);
    assert_eq!(
        b["reinforced"], 2,
        "the tool call and the decision support it"
    );
    assert_eq!(b["weakened"], 1);

    // Filters.
    let (_, r) = app
        .get(&format!(
            "/v1/sessions/{sid}/reconstruction?include_reads=false&include_decisions=false"
        ))
        .await;
    assert_eq!(
        texts(&r["operations"]),
        vec!["search", "tool_call", "write", "todo"]
    );
    assert_eq!(r["decisions"], json!([]));
    let (_, r) = app
        .get(&format!(
            "/v1/sessions/{sid}/reconstruction?include_writes=false"
        ))
        .await;
    assert!(!texts(&r["operations"]).contains(&"write".to_string()));

    // The cut keeps the most important, presented in seq order.
    let (_, r) = app
        .get(&format!(
            "/v1/sessions/{sid}/reconstruction?max_operations=3"
        ))
        .await;
    assert_eq!(
        texts(&r["operations"]),
        vec!["tool_call", "write", "decision"]
    );
    assert_eq!(r["operations_omitted"], 4);

    // A stored LLM summary replaces the built narrative.
    store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {id: $id}) SET s.llm_summary = 'LLM: fixed the parser.'",
            )
            .param("id", sid.as_str()),
        )
        .await
        .unwrap();
    let (_, r) = app.get(&format!("/v1/sessions/{sid}/reconstruction")).await;
    assert_eq!(r["narrative"], "LLM: fixed the parser.");
    assert_eq!(r["narrative_source"], "llm");

    // Bad input and scoping.
    let (s, e) = app
        .get(&format!(
            "/v1/sessions/{sid}/reconstruction?max_operations=-1"
        ))
        .await;
    assert_eq!(s, 400);
    assert_eq!(e["error"]["field"], "max_operations");
    let (s, e) = app.get("/v1/sessions/nope/reconstruction").await;
    assert_eq!(s, 404);
    assert_eq!(e["error"]["code"], "session_not_found");
    let other = app.client_for("test-other-recall", "read").await;
    let r = other
        .get(app.url(&format!("/v1/sessions/{sid}/reconstruction")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        404,
        "another project's session is not found"
    );
}

#[tokio::test]
async fn unfinished_uses_only_the_last_todo_list_and_next_steps() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([
            {"type": "todo", "todos": [{"content": "old item", "status": "pending"}]},
            {"type": "todo", "todos": [{"content": "a", "status": "completed"},
                                        {"content": "b", "status": "in_progress"}]},
        ]),
    )
    .await;
    let got = cairn::recall::reconstruction::unfinished(&store(), &app.project, &sid)
        .await
        .unwrap();
    let contents: Vec<&str> = got.iter().map(|u| u.content.as_str()).collect();
    assert_eq!(contents, vec!["b"], "the earlier list is superseded");
    close(&app, &sid, "done", json!(["B", "deploy"])).await;
    let got = cairn::recall::reconstruction::unfinished(&store(), &app.project, &sid)
        .await
        .unwrap();
    let contents: Vec<&str> = got.iter().map(|u| u.content.as_str()).collect();
    assert_eq!(
        contents,
        vec!["b", "deploy"],
        "a next step already a todo is not repeated"
    );
    // Another project sees nothing.
    let none = cairn::recall::reconstruction::unfinished(&store(), "test-elsewhere", &sid)
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn window_keeps_the_newest_turns_that_fit_oldest_first() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let mut ops = Vec::new();
    for i in 0..10 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        ops.push(json!({"type": "message", "role": role, "content": format!("turn number {i} about the parser")}));
        ops.push(json!({"type": "read", "summary": format!("read file {i}")}));
    }
    app.ops_sync(&sid, json!(ops)).await;
    let line_tokens = tokens::count(Encoding::O200kBase, "User: turn number 9 about the parser");

    let (s, w) = app
        .get(&format!(
            "/v1/sessions/{sid}/window?token_limit={}",
            3 * line_tokens + 3
        ))
        .await;
    assert_eq!(s, 200, "{w}");
    let turns = w["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{w}");
    assert_eq!(
        turns[0]["text"],
        "Assistant: turn number 7 about the parser"
    );
    assert_eq!(turns[1]["text"], "User: turn number 8 about the parser");
    assert_eq!(
        turns[2]["text"],
        "Assistant: turn number 9 about the parser"
    );
    assert_eq!(w["omitted"], 7);
    let text = w["text"].as_str().unwrap();
    assert!(text.starts_with("Assistant: turn number 7"));
    assert_eq!(
        w["tokens_used"].as_u64().unwrap() as usize,
        tokens::count(Encoding::O200kBase, text)
    );
    assert!(w["tokens_used"].as_u64().unwrap() <= w["token_limit"].as_u64().unwrap());

    // At least one turn, cut to fit.
    let (_, w) = app
        .get(&format!("/v1/sessions/{sid}/window?token_limit=3"))
        .await;
    let turns = w["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["seq"], 19);
    assert_eq!(turns[0]["truncated"], true);
    assert!(w["tokens_used"].as_u64().unwrap() <= 3);

    let (s, e) = app
        .get(&format!("/v1/sessions/{sid}/window?token_limit=0"))
        .await;
    assert_eq!(s, 400);
    assert_eq!(e["error"]["field"], "token_limit");
}

/// Three sessions in a chain, each with files and operations, for the context tests.
async fn chain(app: &TestApp) -> (String, String, String) {
    let a = start(app, "set up the parser", None).await;
    app.ops_sync(
        &a,
        json!([
            {"type": "read", "summary": "alpha read the grammar", "files_read": ["grammar.md"]},
            {"type": "write", "summary": "alpha wrote the parser", "files_modified": ["src/parser.rs"]},
        ]),
    )
    .await;
    close(app, &a, "parser set up", json!([])).await;
    let b = start(app, "extend the parser", Some(&a)).await;
    app.ops_sync(
        &b,
        json!([
            {"type": "read", "summary": "beta read the parser", "files_read": ["src/parser.rs"]},
            {"type": "write", "summary": "beta wrote the lexer", "files_modified": ["src/lexer.rs"]},
        ]),
    )
    .await;
    let c = start(app, "finish the parser", Some(&b)).await;
    let mut ops = Vec::new();
    for i in 0..30 {
        ops.push(json!({"type": "tool_call", "tool": "Bash", "summary": format!("gamma step {i:02} ran cargo test in the workspace")}));
    }
    ops.push(json!({"type": "write", "summary": "gamma wrote the parser again", "files_modified": ["src/parser.rs"]}));
    app.ops_sync(&c, json!(ops)).await;
    (a, b, c)
}

#[tokio::test]
async fn context_selects_newest_first_and_presents_chronologically() {
    let app = TestApp::spawn().await;
    let (a, b, c) = chain(&app).await;

    // A roomy budget: all three sessions, oldest first, each session's ops in seq order.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": c, "budget_tokens": 8000}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    assert_eq!(r["sessions"], json!([c, b, a]), "newest first");
    let pa = text.find("alpha read the grammar").unwrap();
    let pb = text.find("beta wrote the lexer").unwrap();
    let pc0 = text.find("gamma step 00").unwrap();
    let pc1 = text.find("gamma wrote the parser again").unwrap();
    assert!(pa < pb && pb < pc0 && pc0 < pc1, "{text}");
    // Files listed once, the newest reference winning, with every session that touched it.
    assert_eq!(text.matches("- src/parser.rs").count(), 1, "{text}");
    let parser_line = text
        .lines()
        .find(|l| l.starts_with("- src/parser.rs"))
        .unwrap();
    assert!(parser_line.contains("(write;"), "{parser_line}");
    for s in [&a, &b, &c] {
        assert!(parser_line.contains(s.as_str()), "{parser_line}");
    }
    assert!(r["warnings"].as_array().unwrap().is_empty(), "{r}");

    // A tight budget: the newest operations only, still in chronological order, and a
    // warning for what was left out.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": c, "budget_tokens": 300}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("gamma wrote the parser again"), "{text}");
    assert!(!text.contains("alpha read"), "{text}");
    assert!(!text.contains("gamma step 00"), "{text}");
    let steps: Vec<usize> = (0..30)
        .filter_map(|i| text.find(&format!("gamma step {i:02}")))
        .collect();
    assert!(!steps.is_empty(), "{text}");
    assert!(
        steps.windows(2).all(|w| w[0] < w[1]),
        "chronological: {text}"
    );
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.contains(&"2 older sessions excluded"),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.ends_with("older operations excluded")),
        "{warnings:?}"
    );

    // The smallest budget still carries the newest item, cut to fit.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": c, "budget_tokens": 16}),
    )
    .await;
    assert!(r["text"].as_str().unwrap().contains("gamma"), "{r}");
    assert!(r["tokens_used"].as_u64().unwrap() <= 16);

    // Files not listed are counted.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": c, "budget_tokens": 400,
               "allocation": {"files": 0.0001, "history": 1.0, "metadata": 0.0}}),
    )
    .await;
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("files not listed"), "{r}");

    // The other encoding is counted in that encoding.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": c, "budget_tokens": 500, "encoding": "cl100k_base"}),
    )
    .await;
    assert_eq!(r["encoding"], "cl100k_base");
}

#[tokio::test]
async fn context_for_a_task_finds_related_sessions_and_long_term_memory() {
    let app = TestApp::spawn().await;
    let (a, _b, c) = chain(&app).await;
    let unrelated = start(&app, "write the release notes", None).await;
    app.ops_sync(
        &unrelated,
        json!([{"type": "write", "summary": "drafted notes", "files_modified": ["NOTES.md"]}]),
    )
    .await;
    // Long-term memory: a memory of a session in scope, one naming a file, one unrelated.
    for (content, conf, sid) in [
        (
            "the parser must stay allocation-free",
            0.9,
            Some(a.as_str()),
        ),
        (
            "src/lexer.rs is generated; edit grammar.md instead",
            0.6,
            None,
        ),
        ("the office coffee machine is broken", 0.99, None),
    ] {
        let (s, m) = app
            .post(
                "/v1/memories",
                &json!({"project": app.project, "kind": "lesson", "content": content,
                        "confidence": conf, "session_id": sid}),
            )
            .await;
        assert_eq!(s, 201, "{m}");
    }
    let (_, belief) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "parser changes need fuzzing"}),
        )
        .await;
    let (_, other_belief) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "mondays are slow"}),
        )
        .await;
    assert!(other_belief["id"].is_string());
    app.ops_sync(
        &c,
        json!([{"type": "tool_call", "summary": "fuzzed", "informs_belief": belief["id"]}]),
    )
    .await;
    let (s, _) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": c, "subject": "parser style",
                    "choice": "recursive descent", "rationale": "readable", "files": ["src/parser.rs"]}),
        )
        .await;
    assert_eq!(s, 201);
    // Task context finds sessions through session search, whose documents are built in the
    // background once a session changes.
    eventually(30, "search indexed the parser sessions", || async {
        let (_, found) = app
            .post(
                "/v1/sessions/search",
                &json!({"project": app.project, "query": "extend the parser grammar"}),
            )
            .await;
        found["sessions"].as_array().is_some_and(|r| r.len() >= 3)
    })
    .await;

    let r = context(
        &app,
        json!({"project": app.project, "task": "extend the parser grammar", "budget_tokens": 4000}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    let sessions = r["sessions"].to_string();
    assert!(
        !sessions.contains(&unrelated),
        "text match excludes it: {r}"
    );
    assert!(text.contains("## Memories"), "{text}");
    assert!(text.contains("allocation-free"), "{text}");
    assert!(text.contains("edit grammar.md instead"), "{text}");
    assert!(
        !text.contains("coffee"),
        "irrelevant memory left out: {text}"
    );
    assert!(
        text.find("allocation-free").unwrap() < text.find("edit grammar.md").unwrap(),
        "relevance × confidence orders memories"
    );
    assert!(text.contains("parser changes need fuzzing"), "{text}");
    assert!(!text.contains("mondays"), "{text}");
    assert!(
        text.contains("- parser style: recursive descent — readable"),
        "{text}"
    );

    // No text match: the project's most recent sessions.
    let r = context(
        &app,
        json!({"project": app.project, "task": "zzzz qqqq", "budget_tokens": 2000}),
    )
    .await;
    assert_eq!(
        r["sessions"][0],
        c.as_str(),
        "the most recently active first: {r}"
    );
    assert!(r["sessions"].to_string().contains(&unrelated), "{r}");
}

/// `count` turns of talk that shares no word with the tasks asked below, a minute apart from
/// `day`'s `hour`, alternating user and assistant.
fn filler(sid: &str, day: &str, hour: u32, count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"id": format!("{sid}-f{i:02}"), "type": "message", "role": role,
                   "content": format!("step {i:02}: tidied the changelog wording and the release checklist"),
                   "at": format!("{day}T{:02}:{:02}:00Z", hour + i as u32 / 60, i % 60)})
        })
        .collect()
}

#[tokio::test]
async fn context_for_a_task_holds_the_relevant_turns_of_old_sessions() {
    let app = TestApp::spawn().await;
    // An old session: the answer comes first, then long unrelated talk buries it.
    let old = app.session().await;
    let mut ops = vec![
        json!({"id": format!("{old}-q"), "type": "message", "role": "user",
               "content": "how long should refresh tokens live before they expire?",
               "at": "2024-01-10T09:00:00Z"}),
        json!({"id": format!("{old}-a"), "type": "message", "role": "assistant",
               "content": "We settled on refresh tokens that expire after fourteen days and rotate on every use.",
               "at": "2024-01-10T09:01:00Z"}),
    ];
    ops.extend(filler(&old, "2024-01-10", 10, 40));
    app.ops_sync(&old, json!(ops)).await;
    // A newer session: one relevant turn in the middle of more unrelated talk.
    let newer = app.session().await;
    let mut ops = filler(&newer, "2024-03-05", 14, 20);
    ops.push(
        json!({"id": format!("{newer}-m"), "type": "message", "role": "assistant",
                    "content": "The mobile client now keeps refresh tokens in the keychain.",
                    "at": "2024-03-05T15:00:00Z"}),
    );
    ops.extend(filler(&format!("{newer}-late"), "2024-03-05", 16, 30));
    app.ops_sync(&newer, json!(ops)).await;
    // The turn index follows commits.
    eventually(60, "turn search finds both relevant turns", || async {
        let found = searched(
            &app,
            json!({"project": app.project, "query": "refresh tokens"}),
        )
        .await;
        let ids = found["operations"].to_string();
        ids.contains(&format!("{old}-a")) && ids.contains(&format!("{newer}-m"))
    })
    .await;

    for budget in [300u64, 600] {
        let r = context(
            &app,
            json!({"project": app.project, "task": "when do refresh tokens expire?",
                   "budget_tokens": budget}),
        )
        .await;
        let text = r["text"].as_str().unwrap();
        // The answer, with the question before it, under its session's day (no other session
        // of the history began that day, so no time of day).
        let header = text
            .find("### 2024-01-10: testing")
            .unwrap_or_else(|| panic!("old session's header at {budget}: {text}"));
        let q = text
            .find("how long should refresh tokens live")
            .unwrap_or(usize::MAX);
        let a = text
            .find("expire after fourteen days")
            .unwrap_or_else(|| panic!("the answer at {budget}: {text}"));
        assert!(
            header < q && q < a,
            "chronological within its session: {text}"
        );
        // The newer session's relevant turn comes after, under its own header: the day the
        // session began.
        let newer_header = text
            .find("### 2024-03-05: testing")
            .unwrap_or_else(|| panic!("newer session's header at {budget}: {text}"));
        let m = text.find("keeps refresh tokens in the keychain").unwrap();
        assert!(
            a < newer_header && newer_header < m,
            "sessions oldest first: {text}"
        );
        // The newest turns are not what fills it.
        assert!(
            !text.contains("changelog wording"),
            "unrelated turns left out: {text}"
        );
        assert_eq!(
            r["sessions"][0],
            old.as_str(),
            "the best hit's session first: {r}"
        );
        assert!(r["tokens_used"].as_u64().unwrap() <= budget);
    }

    // A session's context keeps its newest-first window.
    let r = context(
        &app,
        json!({"project": app.project, "session_id": old, "budget_tokens": 300}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("step 39"), "{text}");
    assert!(!text.contains("fourteen days"), "{text}");
}

/// Two sessions of one day are told apart in a task's history by the time each began; a
/// session alone on its day is headed by the day.
#[tokio::test]
async fn sessions_of_one_day_are_headed_by_their_time() {
    let app = TestApp::spawn().await;
    let said = [
        (
            "2024-01-10T09:00:00Z",
            "Refresh tokens expire after fourteen days.",
        ),
        (
            "2024-03-05T09:30:00Z",
            "Refresh tokens rotate on every use.",
        ),
        (
            "2024-03-05T16:45:00Z",
            "Refresh tokens are revoked when a user logs out.",
        ),
    ];
    for (at, content) in said {
        let sid = app.session().await;
        app.ops_sync(
            &sid,
            json!([{"id": format!("{sid}-t"), "type": "message", "role": "assistant",
                    "content": content, "at": at}]),
        )
        .await;
    }
    eventually(60, "turn search finds the three turns", || async {
        let found = searched(
            &app,
            json!({"project": app.project, "query": "refresh tokens"}),
        )
        .await;
        found["operations"].as_array().map_or(0, Vec::len) == 3
    })
    .await;

    let r = context(
        &app,
        json!({"project": app.project, "task": "what happens to refresh tokens?",
               "budget_tokens": 1000}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("### ")).collect();
    assert_eq!(
        heads,
        [
            "### 2024-01-10: testing",
            "### 2024-03-05 09:30: testing",
            "### 2024-03-05 16:45: testing"
        ],
        "{text}"
    );
    assert!(r["tokens_used"].as_u64().unwrap() <= 1000);

    // A session resumed weeks later is headed by its first day to its last.
    let other = TestApp::spawn().await;
    let sid = other.session().await;
    other
        .ops_sync(
            &sid,
            json!([
                {"type": "message", "role": "user", "content": "Which cache backend do we use?",
                 "at": "2024-05-02T10:00:00Z"},
                {"type": "message", "role": "assistant", "content": "The cache backend is Memcached.",
                 "at": "2024-05-02T10:01:00Z"},
                {"type": "message", "role": "assistant", "content": "The cache backend moved to Redis.",
                 "at": "2024-06-20T15:00:00Z"}
            ]),
        )
        .await;
    eventually(60, "turn search finds the cache turns", || async {
        let found = searched(
            &other,
            json!({"project": other.project, "query": "cache backend"}),
        )
        .await;
        found["operations"].as_array().map_or(0, Vec::len) == 3
    })
    .await;
    let r = context(
        &other,
        json!({"project": other.project, "task": "which cache backend?", "budget_tokens": 1000}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("### ")).collect();
    assert_eq!(heads, ["### 2024-05-02 to 2024-06-20: testing"], "{text}");
    app.stop().await;
    other.stop().await;
}

/// A task context whose lines count longer on one line than their stored counts (markdown
/// replies: a blank line before bold text tokenises shorter than the spaces it becomes)
/// leaves out its least relevant lines, not its end, where the newest session's best hit is.
#[tokio::test]
async fn a_task_context_of_markdown_replies_keeps_its_best_hit_whole() {
    let app = TestApp::spawn().await;
    let old = app.session().await;
    let notes: Vec<Value> = (0..24)
        .map(|i| {
            json!({"id": format!("{old}-n{i:02}"), "type": "message", "role": "assistant",
                   "content": format!("Refresh tokens, note {i}:\n\n**Rotation**\n\n**Storage**\n\n**Scope**\n\n**Audit**\n\n**Revocation**\n\n**Clock skew**"),
                   "at": format!("2024-01-10T09:{i:02}:00Z")})
        })
        .collect();
    app.ops_sync(&old, json!(notes)).await;
    let newer = app.session().await;
    let best = "Refresh tokens expire after fourteen days and rotate on every use.";
    app.ops_sync(
        &newer,
        json!([{"id": format!("{newer}-best"), "type": "message", "role": "assistant",
                "content": best, "at": "2024-03-05T15:00:00Z"}]),
    )
    .await;
    eventually(
        60,
        "turn search finds the notes and the best hit",
        || async {
            let found = searched(
                &app,
                json!({"project": app.project, "query": "refresh tokens", "limit": 30}),
            )
            .await;
            found["operations"].as_array().map_or(0, Vec::len) == 25
        },
    )
    .await;

    let r = context(
        &app,
        json!({"project": app.project, "task": "when do refresh tokens expire?",
               "budget_tokens": 600}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    assert!(text.contains(best), "the best hit, whole: {r}");
    assert!(
        !r["warnings"].to_string().contains("cut at the end"),
        "fitted, not cut: {r}"
    );
    let shown = text.matches("Refresh tokens, note").count();
    assert!(
        (1..24).contains(&shown),
        "some notes, not all, fill the rest: {shown} in {text}"
    );
}

/// A conversation captured from several people: each turn opens with its speaker's name, so a
/// task context shows it as said, not under the role it was captured with; a turn opening
/// with some other label, and one with none, keep their role. Counted exactly all the same.
#[tokio::test]
async fn a_task_context_shows_a_speakers_turn_as_said() {
    const TASK: &str = "which pottery class did Ann and Bo take?";
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let turns = [
        ("a1", "user", "Ann: Morning, Bo! Pottery today?"),
        ("b1", "assistant", "Bo: Ann, the pottery class was fun."),
        (
            "a2",
            "user",
            "Ann: I signed up for the pottery class on Mondays.",
        ),
        (
            "b2",
            "assistant",
            "Bo: Mine is the Tuesday pottery class, Ann.",
        ),
        ("a3", "user", "Ann: See you at the class then, Bo."),
        ("b3", "assistant", "Bo: Bring the clay, Ann."),
        ("n1", "assistant", "Note: the pottery kiln is broken."),
        ("u1", "user", "is the pottery class still on?"),
    ];
    let ops: Vec<Value> = turns
        .iter()
        .map(|(id, role, text)| {
            json!({"id": format!("{sid}-{id}"), "type": "message", "role": role, "content": text})
        })
        .collect();
    app.ops_sync(&sid, json!(ops)).await;
    eventually(30, "turn search finds every turn", || async {
        let found = searched(
            &app,
            json!({"project": app.project, "query": TASK, "limit": 10}),
        )
        .await;
        found["operations"].as_array().map_or(0, Vec::len) == 8
    })
    .await;
    let r = context(
        &app,
        json!({"project": app.project, "task": TASK, "budget_tokens": 2000}),
    )
    .await;
    let text = r["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for shown in [
        "Ann: I signed up for the pottery class on Mondays.",
        "Bo: Mine is the Tuesday pottery class, Ann.",
        "Assistant: Note: the pottery kiln is broken.",
        "User: is the pottery class still on?",
    ] {
        assert!(lines.contains(&shown), "{shown:?} in {text}");
    }
    assert!(
        !text.contains("User: Ann:") && !text.contains("Assistant: Bo:"),
        "{text}"
    );
}

#[tokio::test]
async fn a_small_task_context_shows_its_best_hit_cut_to_fit() {
    const TASK: &str = "when was the parser cache moved out of the lexer?";
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let filler = "We spent the morning on unrelated chores around the office. ".repeat(12);
    let long = format!("{filler}In the end we moved the parser cache out of the lexer. {filler}");
    app.ops_sync(
        &sid,
        json!([
            {"id": format!("{sid}-long"), "type": "message", "role": "assistant",
             "content": long, "at": "2024-02-01T10:00:00Z"},
            {"id": format!("{sid}-short"), "type": "message", "role": "user",
             "content": "cache misses went up", "at": "2024-02-01T10:05:00Z"},
        ]),
    )
    .await;
    eventually(
        30,
        "turn search finds both turns, the long one first",
        || async {
            let found = searched(
                &app,
                json!({"project": app.project, "query": TASK, "limit": 5}),
            )
            .await;
            found["operations"].as_array().map_or(0, Vec::len) == 2
                && found["operations"][0]["operation_id"] == format!("{sid}-long")
        },
    )
    .await;
    for budget in [48, 64] {
        let r = context(
            &app,
            json!({"project": app.project, "task": TASK, "budget_tokens": budget}),
        )
        .await;
        let text = r["text"].as_str().unwrap();
        assert!(
            text.contains("moved the parser cache") && text.contains('…'),
            "at {budget} tokens, the best turn cut around the task: {r}"
        );
        assert!(!text.contains("misses"), "not the lesser turn instead: {r}");
        assert!(r["tokens_used"].as_u64().unwrap() <= budget, "{r}");
    }
}

#[tokio::test]
async fn a_task_context_lists_the_files_its_relevant_operations_touched() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let mut ops = vec![
        json!({"id": format!("{sid}-r"), "type": "read", "target": "src/cache/eviction.rs",
               "summary": "read how the parser cache evicts stale entries",
               "files_read": ["src/cache/eviction.rs"], "at": "2024-02-01T10:00:00Z"}),
        json!({"id": format!("{sid}-w"), "type": "write", "target": "src/cache/eviction.rs",
               "summary": "the parser cache evicts entries by age, not by count",
               "files_modified": ["src/cache/eviction.rs"], "files_read": ["src/cache/mod.rs"],
               "at": "2024-02-01T10:05:00Z"}),
    ];
    // The same session also did unrelated work, on other files, later.
    for i in 0..6 {
        ops.push(json!({"id": format!("{sid}-u{i}"), "type": "write",
                        "target": format!("docs/release-{i}.md"),
                        "summary": format!("tidied release notes page {i}"),
                        "files_modified": [format!("docs/release-{i}.md")],
                        "at": format!("2024-02-01T11:0{i}:00Z")}));
    }
    app.ops_sync(&sid, json!(ops)).await;
    eventually(60, "turn search finds the cache work", || async {
        let found = searched(
            &app,
            json!({"project": app.project, "query": "parser cache eviction"}),
        )
        .await;
        found["operations"]
            .to_string()
            .contains(&format!("{sid}-w"))
    })
    .await;

    let r = context(
        &app,
        json!({"project": app.project, "task": "why does the parser cache evict by age?",
               "budget_tokens": 2000}),
    )
    .await;
    check_guarantee(&r);
    let text = r["text"].as_str().unwrap();
    let files = text
        .split("## ")
        .find(|s| s.starts_with("Files"))
        .unwrap_or_else(|| panic!("a files section: {text}"));
    // Written by its newest touch; listed before the file only read beside it.
    let written = files
        .find(&format!("- src/cache/eviction.rs (write; sessions: {sid})"))
        .unwrap_or_else(|| panic!("the file the relevant work wrote: {files}"));
    let read = files
        .find("- src/cache/mod.rs (read")
        .unwrap_or_else(|| panic!("the file it read: {files}"));
    assert!(written < read, "{files}");
    assert!(
        !files.contains("docs/release-"),
        "the session's unrelated files are not the task's: {files}"
    );
}

#[tokio::test]
async fn a_large_task_context_shows_each_relevant_operation_once_in_order() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    // More relevant operations than a small context holds: a large one shows every one.
    let n = 150;
    let words = [
        "lexer", "router", "schema", "spool", "writer", "budget", "window", "token", "graph",
        "index", "handler", "config", "metrics", "auth", "module", "buffer", "socket", "thread",
    ];
    let line = |i: usize| {
        let (a, b) = (
            words[i % words.len()],
            words[(i / words.len() + 3 * i) % words.len()],
        );
        format!("entry {i:03} of the parser cache: the {a} {b} is evicted by age")
    };
    let ops: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("{sid}-{i}"), "type": "message", "role": "user",
                   "summary": line(i), "content": line(i),
                   "at": format!("2024-02-01T10:{:02}:{:02}Z", i / 60, i % 60)})
        })
        .collect();
    app.ops_sync(&sid, json!(ops)).await;
    eventually(60, "turn search finds the last operation", || async {
        let found = searched(&app, json!({"project": app.project, "query": line(n - 1)})).await;
        found["operations"]
            .to_string()
            .contains(&format!("{sid}-{}", n - 1))
    })
    .await;

    let r = context(
        &app,
        json!({"project": app.project, "task": "which parser cache entries are evicted by age?",
               "budget_tokens": 8000}),
    )
    .await;
    check_guarantee(&r);
    let text = r["text"].as_str().unwrap();
    let mut last = 0;
    for i in 0..n {
        let line = line(i);
        assert_eq!(text.matches(&line).count(), 1, "{line} once: {text}");
        let at = text.find(&line).unwrap();
        assert!(at > last, "{line} after the one before: {text}");
        last = at;
    }
}

#[tokio::test]
async fn context_rejects_bad_input_with_the_field() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let p = &app.project;
    for (body, field, code) in [
        (
            json!({"project": p, "session_id": sid, "budget_tokens": 15}),
            "budget_tokens",
            "invalid_budget",
        ),
        (
            json!({"project": p, "session_id": sid, "budget_tokens": 2_000_000}),
            "budget_tokens",
            "invalid_budget",
        ),
        (
            json!({"project": p, "budget_tokens": 100}),
            "session_id",
            "missing_field",
        ),
        (
            json!({"project": p, "session_id": sid, "budget_tokens": 100, "encoding": "p50k"}),
            "encoding",
            "invalid_encoding",
        ),
        (
            json!({"project": p, "session_id": sid, "budget_tokens": 100, "allocation": {"content": 0.9}}),
            "allocation.content",
            "invalid_allocation",
        ),
        (
            json!({"project": p, "task": "x".repeat(5000), "budget_tokens": 100}),
            "task",
            "field_too_large",
        ),
        (
            json!({"project": p, "task": " ", "budget_tokens": 100}),
            "task",
            "missing_field",
        ),
        // Response and framing leave content nothing: the shares sent are at fault.
        (
            json!({"project": p, "task": "cache", "budget_tokens": 100, "allocation": {"response": 0.8}}),
            "allocation.response",
            "invalid_allocation",
        ),
        (
            json!({"project": p, "task": "cache", "budget_tokens": 100, "allocation": {"response": 1.5}}),
            "allocation.response",
            "invalid_allocation",
        ),
    ] {
        let (s, e) = app.post("/v1/context", &body).await;
        assert_eq!(s, 400, "{e}");
        assert_eq!(e["error"]["field"], field, "{e}");
        assert_eq!(e["error"]["code"], code, "{e}");
    }
    let (s, e) = app
        .post(
            "/v1/context",
            &json!({"project": p, "session_id": "missing", "budget_tokens": 100}),
        )
        .await;
    assert_eq!(s, 404, "{e}");
    let (s, _) = app
        .post(
            "/v1/context",
            &json!({"project": "test-someone-else", "task": "x", "budget_tokens": 100}),
        )
        .await;
    assert_eq!(s, 403);
    // `response` alone keeps room for a reply: content takes what it and framing leave.
    let (s, ctx) = app
        .post(
            "/v1/context",
            &json!({"project": p, "session_id": sid, "budget_tokens": 400, "allocation": {"response": 0.25}}),
        )
        .await;
    assert_eq!(s, 200, "{ctx}");
    assert_eq!(ctx["budget_tokens"], 400, "{ctx}");
    assert!(ctx["tokens_used"].as_i64().unwrap() <= 300, "{ctx}");
}

/// A random project: sessions (some continuing others), operations of every kind with
/// unicode and long text, files, decisions, memories.
/// `(kind index, text, files)`.
type RandomOp = (u8, String, Vec<String>);

#[derive(Debug, Clone)]
struct Graph {
    /// `(continues the previous session, operations)`.
    sessions: Vec<(bool, Vec<RandomOp>)>,
    memories: Vec<String>,
}

fn graph_strategy() -> impl Strategy<Value = Graph> {
    let text = prop_oneof![
        "[a-z][a-z ]{0,40}",
        "[a-zA-Z][a-zA-Z0-9 .,;:()\\[\\]{}\n]{0,200}",
        "[a-z]\\PC{0,80}",
        Just("🙂🙂🙂 déjà vu 東京 — ".repeat(20)),
    ];
    let op = (
        0u8..6,
        text.clone(),
        proptest::collection::vec("[a-c]/[a-d]\\.rs", 0..3),
    );
    let session = (any::<bool>(), proptest::collection::vec(op, 0..25));
    (
        proptest::collection::vec(session, 1..5),
        proptest::collection::vec(text, 0..4),
    )
        .prop_map(|(sessions, memories)| Graph { sessions, memories })
}

async fn seed(app: &TestApp, g: &Graph) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (continues, ops) in &g.sessions {
        let prev = if *continues {
            ids.last().cloned()
        } else {
            None
        };
        let sid = start(app, "random work on the parser", prev.as_deref()).await;
        let kinds = [
            "read",
            "write",
            "tool_call",
            "search",
            "message",
            "decision",
        ];
        let ops: Vec<Value> = ops
            .iter()
            .map(|(k, text, files)| {
                let kind = kinds[*k as usize];
                match kind {
                    "message" => json!({"type": "message", "role": if text.len() % 2 == 0 {"user"} else {"assistant"}, "content": text}),
                    "write" => json!({"type": kind, "summary": text, "files_modified": files}),
                    _ => json!({"type": kind, "summary": text, "target": files.first(), "files_read": files}),
                }
            })
            .collect();
        if !ops.is_empty() {
            app.ops_sync(&sid, json!(ops)).await;
        }
        ids.push(sid);
    }
    for m in &g.memories {
        let (s, b) = app
            .post(
                "/v1/memories",
                &json!({"project": app.project, "kind": "fact", "content": m, "session_id": ids[0]}),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    ids
}

#[tokio::test]
async fn context_never_overflows_over_random_graphs_and_budgets() {
    let mut runner = TestRunner::new(Config {
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    });
    let budgets = (
        prop_oneof![16usize..64, 16usize..600, 16usize..20_000],
        any::<bool>(),
        0.05f64..0.9,
        0.0f64..1.0,
    );
    for _graph in 0..4 {
        let g = graph_strategy()
            .new_tree(&mut runner)
            .expect("graph")
            .current();
        let app = TestApp::spawn().await;
        let ids = seed(&app, &g).await;
        for _ in 0..25 {
            let (budget, cl100k, content, files) =
                budgets.new_tree(&mut runner).expect("budget").current();
            let session = ids[budget % ids.len()].clone();
            let body = json!({
                "project": app.project,
                "session_id": if budget % 3 == 0 { Value::Null } else { json!(session) },
                "task": "parser work",
                "budget_tokens": budget,
                "encoding": if cl100k { "cl100k_base" } else { "o200k_base" },
                "allocation": {"content": content, "response": 0.0, "overhead": 1.0 - content, "files": files},
            });
            let (s, r) = app.post("/v1/context", &body).await;
            assert_eq!(s, 200, "{r} for {body} over {g:?}");
            check_guarantee(&r);
            let has_history = g.sessions.iter().any(|(_, ops)| !ops.is_empty());
            if has_history && body["session_id"].is_string() {
                let sid = body["session_id"].as_str().unwrap();
                let idx = ids.iter().position(|i| i == sid).unwrap();
                if !g.sessions[idx].1.is_empty() {
                    assert!(
                        !r["text"].as_str().unwrap().is_empty(),
                        "at least the newest item: {r} for {body}"
                    );
                }
            }
        }
    }
}
