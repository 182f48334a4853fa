//! The extraction job end to end: the real app and Neo4j, the LLM faked at the HTTP boundary
//! by wiremock (async-openai's real HTTP path talks to it).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::{
    matchers::{body_string_contains, method, path},
    Mock, MockServer, ResponseTemplate,
};

use crate::helpers::{count, settle, TestApp};

/// An OpenAI chat-completion response whose message is `content`.
fn completion(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000u64,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}
    }))
}

fn answer(patterns: Vec<Value>) -> String {
    json!({ "patterns": patterns }).to_string()
}

fn pattern(
    evidence: &[&str],
    belief: &str,
    reinforces: Option<&str>,
    contradicts: Option<&str>,
) -> Value {
    json!({
        "pattern": format!("pattern behind: {belief}"),
        "evidence": evidence,
        "suggested_belief": {"content": belief, "category": "workflow", "conviction": 0.7},
        "reinforces_belief_id": reinforces,
        "contradicts_belief_id": contradicts,
        "confidence": 0.8
    })
}

async fn llm_app(server: &MockServer) -> TestApp {
    let uri = server.uri();
    TestApp::builder()
        .with(move |s| {
            s.extract.llm_base_url = Some(uri);
            s.extract.llm_timeout_secs = 10;
            s.extract.llm_max_retries = 2;
        })
        .spawn()
        .await
}

async fn answer_with(server: &MockServer, content: &str) {
    server.reset().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(completion(content))
        .mount(server)
        .await;
}

/// A globally unique operation id for this test's project.
fn op_id(app: &TestApp, name: &str) -> String {
    format!("{}-{name}", app.project)
}

/// A closed session: read the schema, write the model, a failing test run; ops dated `at`.
async fn closed_session(app: &TestApp, tag: &str, at: Option<&str>) -> (String, Vec<String>) {
    let sid = app.session().await;
    let ids: Vec<String> = ["r", "w", "t"]
        .iter()
        .map(|n| op_id(app, &format!("{tag}{n}")))
        .collect();
    let mut ops = json!([
        {"id": ids[0], "type": "read", "target": "db/schema.sql", "summary": "read the schema",
         "files_read": ["db/schema.sql"]},
        {"id": ids[1], "type": "write", "target": "src/model.rs", "summary": "updated the model to the new column",
         "files_modified": ["src/model.rs"]},
        {"id": ids[2], "type": "tool_call", "tool": "Bash", "target": "cargo test", "summary": "ran the tests"}
    ]);
    if let Some(at) = at {
        for op in ops.as_array_mut().expect("array") {
            op["at"] = json!(at);
        }
    }
    app.ops_sync(&sid, ops).await;
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": "schema change"}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    (sid, ids)
}

/// Starts a run and waits for it to finish; returns the run as GET shows it.
async fn run(app: &TestApp) -> Value {
    let (s, b) = app
        .post("/v1/extraction/runs", &json!({"project": app.project}))
        .await;
    assert_eq!(s, 202, "{b}");
    let id = b["run_id"].as_str().expect("run id").to_string();
    let run = settle(
        90,
        || async {
            let (s, run) = app.get(&format!("/v1/extraction/runs/{id}")).await;
            assert_eq!(s, 200, "{run}");
            run
        },
        |run| run["status"] != "running",
    )
    .await;
    assert_ne!(run["status"], "running", "run did not finish: {run}");
    run
}

async fn beliefs(app: &TestApp) -> Vec<Value> {
    let (s, b) = app
        .get(&format!("/v1/beliefs?project={}", app.project))
        .await;
    assert_eq!(s, 200, "{b}");
    b["beliefs"].as_array().expect("beliefs").clone()
}

/// A closed session whose extraction the fake LLM answers with `patterns(ids)`; returns the
/// session's operation ids and the finished run.
async fn extract_session(
    app: &TestApp,
    server: &MockServer,
    tag: &str,
    at: Option<&str>,
    patterns: impl FnOnce(&[String]) -> Vec<Value>,
) -> (Vec<String>, Value) {
    let (_, ids) = closed_session(app, tag, at).await;
    answer_with(server, &answer(patterns(&ids))).await;
    let r = run(app).await;
    (ids, r)
}

/// Two figures of a run, for one assertion.
fn pair(r: &Value, a: &str, b: &str) -> (Option<i64>, Option<i64>) {
    (r[a].as_i64(), r[b].as_i64())
}

const BELIEF: &str = "Update src/model.rs whenever db/schema.sql changes";

#[tokio::test]
async fn happy_path_stores_patterns_evidence_and_a_proposed_belief() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    answer_with(
        &server,
        &answer(vec![pattern(&[&ids[0], &ids[1]], BELIEF, None, None)]),
    )
    .await;

    let r = run(&app).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["mode"], "llm");
    assert_eq!(r["prompt_version"], "extract_v1");
    assert_eq!(
        (r["sessions"].as_i64(), r["patterns"].as_i64()),
        (Some(1), Some(1)),
        "{r}"
    );
    assert_eq!(r["beliefs_created"], 1);
    assert_eq!(r["llm_calls"], 1);
    assert_eq!(
        (r["prompt_tokens"].as_i64(), r["completion_tokens"].as_i64()),
        (Some(1000), Some(200))
    );
    assert!(r["cost_estimate"].as_f64().unwrap_or(0.0) > 0.0, "{r}");

    // One request, constrained by the contract's JSON schema, every digest line carrying its id.
    let requests = server.received_requests().await.expect("recorded");
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).expect("json body");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert!(body["response_format"]["json_schema"]["schema"]["properties"]["patterns"].is_object());
    let user = body["messages"][1]["content"]
        .as_str()
        .expect("user message");
    for id in &ids {
        assert!(
            user.lines().any(|l| l.starts_with(id.as_str())),
            "{id} not in:\n{user}"
        );
    }

    let p = &app.project;
    assert_eq!(count("MATCH (p:Pattern {project: $project, source: 'llm'})-[:EVIDENCED_BY]->(o:Operation) RETURN count(o) AS n", p).await, 2);
    assert_eq!(count("MATCH (:Pattern {project: $project})-[r:INFORMS {effect: 'supports'}]->(b:Belief {status: 'proposed'}) WHERE r.weight = 0.8 RETURN count(b) AS n", p).await, 1);
    assert_eq!(count("MATCH (p:Pattern {project: $project, prompt_version: 'extract_v1'}) RETURN count(p) AS n", p).await, 1);
    let list = beliefs(&app).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["content"], BELIEF);
    assert_eq!(list[0]["supporting"], 1);
    // Stored conviction agrees with the read-time formula.
    let stored = count(
        "MATCH (b:Belief {project: $project}) RETURN toInteger(round(b.conviction * 1000)) AS n",
        p,
    )
    .await;
    let shown = (list[0]["conviction"].as_f64().expect("conviction") * 1000.0).round() as i64;
    assert_eq!(stored, shown);

    let (_, metrics) = app.get("/metrics").await;
    assert!(metrics
        .as_str()
        .unwrap_or("")
        .contains("cairn_extract_llm_calls_total"));
}

#[tokio::test]
async fn invented_evidence_is_rejected_and_counted() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    // An operation of another session of the same project is not evidence for this one.
    let other = app.session().await;
    let foreign = op_id(&app, "foreign");
    app.ops_sync(
        &other,
        json!([{"id": foreign, "type": "read", "target": "x", "summary": "x"}]),
    )
    .await;
    answer_with(
        &server,
        &answer(vec![
            pattern(&[&ids[0], "op-invented"], BELIEF, None, None),
            pattern(
                &[&foreign],
                "Something only the other session shows",
                None,
                None,
            ),
        ]),
    )
    .await;

    let r = run(&app).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["evidence_rejected"], 2, "{r}");
    assert_eq!(r["patterns"], 1, "{r}");
    assert_eq!(count("MATCH (:Pattern {project: $project, source: 'llm'})-[:EVIDENCED_BY]->(o) RETURN count(o) AS n", &app.project).await, 1);
}

#[tokio::test]
async fn malformed_answer_is_retried_once_then_the_session_fails_cleanly() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    closed_session(&app, "a", None).await;
    answer_with(&server, "this is not JSON at all").await;

    let r = run(&app).await;
    assert_eq!(r["status"], "completed_with_errors", "{r}");
    assert_eq!(
        (r["sessions"].as_i64(), r["sessions_failed"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(r["llm_calls"], 2);
    assert!(
        r["errors"][0]
            .as_str()
            .unwrap_or("")
            .contains("invalid LLM answer"),
        "{r}"
    );
    let requests = server.received_requests().await.expect("recorded");
    assert_eq!(requests.len(), 2);
    let retry: Value = serde_json::from_slice(&requests[1].body).expect("json");
    let last = retry["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert!(
        last["content"].as_str().unwrap_or("").contains("rejected"),
        "{last}"
    );
    // Nothing half-applied: no pattern, no belief, the session is still pending.
    let p = &app.project;
    assert_eq!(
        count(
            "MATCH (n:Pattern {project: $project}) RETURN count(n) AS n",
            p
        )
        .await,
        0
    );
    assert_eq!(
        count(
            "MATCH (n:Belief {project: $project}) RETURN count(n) AS n",
            p
        )
        .await,
        0
    );
    assert_eq!(count("MATCH (s:Session {project: $project}) WHERE s.extracted_versions IS NULL RETURN count(s) AS n", p).await, 1);
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_delay() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "slow down", "type": "rate_limit_error", "param": null, "code": null}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(completion(&answer(vec![pattern(
            &[&ids[1]],
            BELIEF,
            None,
            None,
        )])))
        .with_priority(2)
        .mount(&server)
        .await;

    let started = Instant::now();
    let r = run(&app).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["patterns"], 1);
    assert_eq!(r["llm_calls"], 1, "HTTP retries are one call");
    assert_eq!(server.received_requests().await.expect("recorded").len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
}

#[tokio::test]
async fn a_request_that_times_out_is_sent_again() {
    let server = MockServer::start().await;
    let uri = server.uri();
    let app = TestApp::builder()
        .with(move |s| {
            s.extract.llm_base_url = Some(uri);
            s.extract.llm_timeout_secs = 1;
            s.extract.llm_max_retries = 2;
        })
        .spawn()
        .await;
    let (_, ids) = closed_session(&app, "a", None).await;
    let good = answer(vec![pattern(&[&ids[1]], BELIEF, None, None)]);
    Mock::given(method("POST"))
        .respond_with(completion(&good).set_delay(Duration::from_secs(3)))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(completion(&good))
        .with_priority(2)
        .mount(&server)
        .await;

    let r = run(&app).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["patterns"], 1, "{r}");
    assert_eq!(r["llm_calls"], 1, "HTTP retries are one call");
    assert_eq!(server.received_requests().await.expect("recorded").len(), 2);
}

#[tokio::test]
async fn json_schema_refused_falls_back_to_json_mode() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    Mock::given(method("POST"))
        .and(body_string_contains("json_schema"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error", "param": "response_format", "code": null}}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_string_contains("json_object"))
        .respond_with(completion(&answer(vec![pattern(
            &[&ids[0]],
            BELIEF,
            None,
            None,
        )])))
        .mount(&server)
        .await;

    let r = run(&app).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["patterns"], 1);
    assert_eq!(server.received_requests().await.expect("recorded").len(), 2);
}

#[tokio::test]
async fn a_second_run_does_nothing() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    answer_with(
        &server,
        &answer(vec![pattern(&[&ids[0]], BELIEF, None, None)]),
    )
    .await;

    let first = run(&app).await;
    assert_eq!(first["sessions"], 1, "{first}");
    let second = run(&app).await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        (second["sessions"].as_i64(), second["patterns"].as_i64()),
        (Some(0), Some(0))
    );
    assert_eq!(server.received_requests().await.expect("recorded").len(), 1);
    let p = &app.project;
    assert_eq!(
        count(
            "MATCH (n:Pattern {project: $project}) RETURN count(n) AS n",
            p
        )
        .await,
        1
    );
    assert_eq!(
        count(
            "MATCH ()-[r:INFORMS]->(:Belief {project: $project}) RETURN count(r) AS n",
            p
        )
        .await,
        1
    );
    assert_eq!(
        count(
            "MATCH (r:ExtractionRun {project: $project}) RETURN count(r) AS n",
            p
        )
        .await,
        2
    );
}

#[tokio::test]
async fn support_raises_conviction_and_contradiction_lowers_it() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    extract_session(&app, &server, "a", None, |a| {
        vec![pattern(&[&a[0], &a[1]], BELIEF, None, None)]
    })
    .await;
    let list = beliefs(&app).await;
    let id = list[0]["id"].as_str().expect("id").to_string();
    let c0 = list[0]["conviction"].as_f64().expect("c0");

    let (_, r) = extract_session(&app, &server, "b", None, |b| {
        vec![pattern(
            &[&b[1]],
            "the model follows the schema",
            Some(&id),
            None,
        )]
    })
    .await;
    assert_eq!(
        pair(&r, "beliefs_reinforced", "beliefs_created"),
        (Some(1), Some(0)),
        "{r}"
    );
    let c1 = beliefs(&app).await[0]["conviction"].as_f64().expect("c1");
    assert!(c1 > c0, "support raises conviction: {c0} → {c1}");

    let (_, r) = extract_session(&app, &server, "c", None, |c| {
        vec![pattern(
            &[&c[1]],
            "the model changed alone",
            None,
            Some(&id),
        )]
    })
    .await;
    assert_eq!(r["beliefs_contradicted"], 1, "{r}");
    let after = beliefs(&app).await;
    let c2 = after[0]["conviction"].as_f64().expect("c2");
    assert!(c2 < c1, "contradiction lowers conviction: {c1} → {c2}");
    assert_eq!(
        pair(&after[0], "supporting", "contradicting"),
        (Some(2), Some(1))
    );

    // A suggestion worded like the existing belief joins it instead of duplicating it.
    let (_, r) = extract_session(&app, &server, "d", None, |d| {
        vec![pattern(&[&d[0]], &format!("{BELIEF}!"), None, None)]
    })
    .await;
    assert_eq!(
        pair(&r, "beliefs_reinforced", "beliefs_created"),
        (Some(1), Some(0)),
        "{r}"
    );
    assert_eq!(beliefs(&app).await.len(), 1);
}

#[tokio::test]
async fn old_evidence_counts_less_than_fresh_evidence() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    extract_session(&app, &server, "old", Some("2023-01-01T00:00:00Z"), |o| {
        vec![pattern(
            &[&o[0]],
            "Old sessions used the legacy build",
            None,
            None,
        )]
    })
    .await;
    extract_session(&app, &server, "new", None, |n| {
        vec![pattern(
            &[&n[0]],
            "Fresh sessions run the linter first",
            None,
            None,
        )]
    })
    .await;

    let list = beliefs(&app).await;
    let conviction = |content: &str| {
        list.iter()
            .find(|b| b["content"].as_str().unwrap_or("").contains(content))
            .and_then(|b| b["conviction"].as_f64())
            .expect("belief")
    };
    let (c_old, c_new) = (conviction("legacy"), conviction("linter"));
    // Prior 0.7 worth two observations: 0.6 with no evidence. Evidence from years ago has
    // decayed through many 90-day half-lives and barely moves it.
    assert!(c_new > c_old + 0.03, "fresh {c_new} vs old {c_old}");
    assert!(
        (c_old - 0.6).abs() < 0.01,
        "old evidence has faded: {c_old}"
    );
}

#[tokio::test]
async fn dry_run_prints_prompts_and_writes_nothing() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    answer_with(&server, &answer(vec![])).await;

    let (s, b) = app
        .post(
            "/v1/extraction/runs",
            &json!({"project": app.project, "dry_run": true}),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let prompt = &b["prompts"][0];
    assert!(prompt["tokens"].as_u64().unwrap_or(0) > 100, "{b}");
    assert!(
        prompt["prompt"].as_str().unwrap_or("").contains(&ids[1]),
        "{b}"
    );
    assert_eq!(server.received_requests().await.expect("recorded").len(), 0);
    let p = &app.project;
    assert_eq!(count("MATCH (n) WHERE (n:Pattern OR n:ExtractionRun OR n:Belief) AND n.project = $project RETURN count(n) AS n", p).await, 0);
    assert_eq!(count("MATCH (s:Session {project: $project}) WHERE s.extracted_versions IS NULL RETURN count(s) AS n", p).await, 1);
    // The session is still there for a real run.
    assert_eq!(run(&app).await["sessions"], 1);
}

#[tokio::test]
async fn without_an_llm_mining_runs_alone_and_stores_candidates() {
    let app = TestApp::builder()
        .with(|s| s.extract.llm_base_url = None)
        .spawn()
        .await;
    let (_, a) = closed_session(&app, "a", None).await;
    let (_, b) = closed_session(&app, "b", None).await;

    let r = run(&app).await;
    assert_eq!(r["mode"], "mining_only", "{r}");
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        (r["sessions"].as_i64(), r["llm_calls"].as_i64()),
        (Some(2), Some(0))
    );
    assert!(r["candidates"].as_i64().unwrap_or(0) >= 2, "{r}");
    // The read → write sequence recurs in both sessions: one candidate evidenced by both.
    let p = &app.project;
    assert_eq!(count("MATCH (c:Pattern {project: $project, kind: 'sequence', source: 'mining'}) RETURN count(c) AS n", p).await, 1);
    for id in [&a[0], &a[1], &b[0], &b[1]] {
        let q = format!("MATCH (:Pattern {{project: $project, kind: 'sequence'}})-[:EVIDENCED_BY]->(o:Operation {{id: '{id}'}}) RETURN count(o) AS n");
        assert_eq!(count(&q, p).await, 1, "{id}");
    }
    assert_eq!(
        count(
            "MATCH (n:Belief {project: $project}) RETURN count(n) AS n",
            p
        )
        .await,
        0
    );
    assert_eq!(run(&app).await["sessions"], 0);
}

#[tokio::test]
async fn approval_workflow_and_rejected_beliefs_are_not_proposed_again() {
    const TESTS: &str = "Run cargo test after every model change";
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    extract_session(&app, &server, "a", None, |a| {
        vec![
            pattern(&[&a[0]], BELIEF, None, None),
            pattern(&[&a[2]], TESTS, None, None),
        ]
    })
    .await;
    let list = beliefs(&app).await;
    let id_of = |content: &str| {
        list.iter()
            .find(|b| b["content"] == content)
            .and_then(|b| b["id"].as_str())
            .expect("belief")
            .to_string()
    };
    let (keep, drop) = (id_of(BELIEF), id_of(TESTS));

    let review = |id: &str, action: &str| format!("/v1/beliefs/{id}/{action}");
    let (s, b) = app.post(&review(&keep, "approve"), &json!({})).await;
    assert_eq!(
        (s, b["status"].as_str(), b["previous"].as_str()),
        (200, Some("active"), Some("proposed")),
        "{b}"
    );
    let (s, b) = app.post(&review(&drop, "reject"), &json!({})).await;
    assert_eq!((s, b["status"].as_str()), (200, Some("rejected")), "{b}");
    let (s, b) = app.post(&review(&drop, "approve"), &json!({})).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (409, Some("invalid_transition")),
        "{b}"
    );
    let (s, b) = app.post(&review("nope", "approve"), &json!({})).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("belief_not_found")),
        "{b}"
    );

    // The same content again, from new evidence: not proposed a second time.
    let (_, r) = extract_session(&app, &server, "c", None, |c| {
        vec![pattern(&[&c[2]], TESTS, None, None)]
    })
    .await;
    assert_eq!(
        pair(&r, "beliefs_suppressed", "beliefs_created"),
        (Some(1), Some(0)),
        "{r}"
    );
    assert_eq!(beliefs(&app).await.len(), 2);
}

#[tokio::test]
async fn auto_approval_above_the_threshold() {
    let server = MockServer::start().await;
    let uri = server.uri();
    let app = TestApp::builder()
        .with(move |s| {
            s.extract.llm_base_url = Some(uri);
            s.extract.auto_approve_conviction = Some(0.6);
        })
        .spawn()
        .await;
    let (_, a) = closed_session(&app, "a", None).await;
    answer_with(
        &server,
        &answer(vec![pattern(&[&a[0], &a[1]], BELIEF, None, None)]),
    )
    .await;
    run(&app).await;
    let list = beliefs(&app).await;
    assert_eq!(list[0]["status"], "active", "{list:?}");
}

#[tokio::test]
async fn bad_run_requests_name_the_field() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (s, b) = app
        .post(
            "/v1/extraction/runs",
            &json!({"project": app.project, "since": "soon"}),
        )
        .await;
    assert_eq!(
        (s, b["error"]["field"].as_str()),
        (400, Some("since")),
        "{b}"
    );
    let (s, b) = app
        .post(
            "/v1/extraction/runs",
            &json!({"project": app.project, "max_sessions": 0}),
        )
        .await;
    assert_eq!(
        (s, b["error"]["field"].as_str()),
        (400, Some("max_sessions")),
        "{b}"
    );
    let (s, b) = app.get("/v1/extraction/runs/unknown").await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("extraction_run_not_found")),
        "{b}"
    );
    let other = app.client_for("someone-else", "admin").await;
    let r = other
        .post(app.url("/v1/extraction/runs"))
        .json(&json!({"project": app.project}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 403);
}

#[derive(clap::Parser)]
struct ExtractCli {
    #[command(flatten)]
    args: cairn::cli::extract::ExtractArgs,
}

/// `cairn extract` as a user runs it: its exit code says whether a session failed.
async fn cairn_extract(app: &TestApp, server: &MockServer, extra: &[&str]) -> i32 {
    use clap::Parser;
    let mut argv = vec![
        "extract".to_string(),
        "--project".into(),
        app.project.clone(),
        "--llm-base-url".into(),
        server.uri(),
        "--llm-max-retries".into(),
        "0".into(),
        "--neo4j-uri".into(),
        crate::helpers::neo4j_uri(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    let cli = ExtractCli::parse_from(argv);
    cairn::cli::extract::run(cli.args)
        .await
        .expect("extract runs")
}

#[tokio::test]
async fn the_cli_exits_non_zero_when_a_session_failed() {
    let server = MockServer::start().await;
    let app = llm_app(&server).await;
    let (_, ids) = closed_session(&app, "a", None).await;
    let p = &app.project;
    let written = "MATCH (n) WHERE (n:Pattern OR n:ExtractionRun) AND n.project = $project RETURN count(n) AS n";

    answer_with(&server, "{not json").await;
    assert_eq!(
        cairn_extract(&app, &server, &["--dry-run", "--since", "1h"]).await,
        0
    );
    assert_eq!(count(written, p).await, 0, "a dry run writes nothing");
    assert_eq!(server.received_requests().await.expect("recorded").len(), 0);

    assert_eq!(
        cairn_extract(&app, &server, &["--concurrency", "2"]).await,
        1
    );
    assert_eq!(count("MATCH (r:ExtractionRun {project: $project, status: 'completed_with_errors'}) RETURN count(r) AS n", p).await, 1);
    assert_eq!(
        count(
            "MATCH (n:Pattern {project: $project}) RETURN count(n) AS n",
            p
        )
        .await,
        0
    );

    answer_with(
        &server,
        &answer(vec![pattern(&[&ids[0]], BELIEF, None, None)]),
    )
    .await;
    assert_eq!(cairn_extract(&app, &server, &[]).await, 0);
    assert_eq!(
        count(
            "MATCH (r:ExtractionRun {project: $project, status: 'completed'}) RETURN count(r) AS n",
            p
        )
        .await,
        1
    );
    assert_eq!(
        cairn_extract(&app, &server, &[]).await,
        0,
        "nothing left to do"
    );
}

#[tokio::test]
async fn related_beliefs_are_looked_up_among_the_projects_beliefs_only() {
    let mine = format!("test-{}", uuid::Uuid::new_v4().simple());
    let theirs = format!("{mine}-other");
    let store = crate::helpers::store();
    crate::helpers::schema_once().await;
    for (project, n) in [(&mine, 1), (&theirs, 2)] {
        for i in 0..n {
            store
                .run(
                    neo4rs::query("CREATE (:Belief {id: $id, project: $project, content: $content, status: 'proposed'})")
                        .param("id", format!("{project}-b{i}"))
                        .param("project", project.as_str())
                        .param("content", format!("migrations run before the model changes {i}")),
                )
                .await
                .expect("belief");
        }
        // An operation with the same words is no belief.
        store
            .run(
                neo4rs::query("CREATE (:Operation {id: $id, project: $project, summary: 'migrations run before the model changes'})")
                    .param("id", format!("{project}-op"))
                    .param("project", project.as_str()),
            )
            .await
            .expect("operation");
    }
    let words = cairn::graph::extraction::fulltext_query("do migrations run first?", 10).unwrap();
    let found = cairn::graph::extraction::related_beliefs(&store, &mine, &words, 10)
        .await
        .expect("lookup");
    let ids: Vec<&str> = found.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, [format!("{mine}-b0")]);
    let found = cairn::graph::extraction::related_beliefs(&store, &theirs, &words, 10)
        .await
        .expect("lookup");
    assert_eq!(found.len(), 2);
}
