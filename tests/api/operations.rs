use serde_json::{json, Value};

use crate::helpers::{count, store, TestApp};

async fn seqs(session: &str) -> Vec<i64> {
    let rows = store()
        .rows(
            neo4rs::query("MATCH (o:Operation {session_id: $s}) WHERE o.seq >= 0 RETURN o.seq AS seq ORDER BY seq")
                .param("s", session),
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get::<i64>("seq").unwrap()).collect()
}

/// FOLLOWS forms one unbranched chain from the last operation back to seq 1.
async fn assert_single_chain(session: &str, expected: i64) {
    let rows = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {session_id: $s}) WHERE o.seq >= 0
                 OPTIONAL MATCH (o)-[f:FOLLOWS]->(p:Operation)
                 WITH o, count(f) AS out, collect(p.seq) AS prev
                 OPTIONAL MATCH (n:Operation)-[:FOLLOWS]->(o)
                 WITH o, out, prev, count(n) AS inc
                 RETURN sum(CASE WHEN out > 1 OR inc > 1 THEN 1 ELSE 0 END) AS branched,
                        sum(CASE WHEN out = 0 THEN 1 ELSE 0 END) AS heads,
                        sum(CASE WHEN out = 1 AND prev[0] = o.seq - 1 THEN 1 ELSE 0 END) AS consecutive,
                        count(o) AS total",
            )
            .param("s", session),
        )
        .await
        .unwrap();
    let r = &rows[0];
    assert_eq!(r.get::<i64>("total").unwrap(), expected);
    assert_eq!(
        r.get::<i64>("branched").unwrap(),
        0,
        "no branch in the chain"
    );
    assert_eq!(
        r.get::<i64>("heads").unwrap(),
        1,
        "exactly one first operation"
    );
    assert_eq!(
        r.get::<i64>("consecutive").unwrap(),
        expected - 1,
        "each op follows seq-1"
    );
}

#[tokio::test]
async fn every_type_is_stored_with_seq_chain_files_and_tokens() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let id = |s: &str| format!("{}-{s}", app.project);
    let ops = json!([
        {"id": id("op-read"), "type": "read", "target": "/repo/src/lib.rs", "summary": "read the lib", "files_read": ["/repo/src/lib.rs"], "context": {"cwd": "/repo"}},
        {"id": id("op-search"), "type": "search", "target": "fn parse", "summary": "grep for parse", "tool": "Grep"},
        {"id": id("op-write"), "type": "write", "summary": "fixed the parser", "files_modified": ["src/parse.rs", "./src/../src/parse.rs"], "triggered_by": id("op-read")},
        {"id": id("op-tool"), "type": "tool_call", "target": "cargo test", "summary": "ran tests", "tool": "Bash", "status": "failed"},
        {"id": id("op-decision"), "type": "decision", "summary": "use nom", "rationale": "combinators"},
        {"id": id("op-user"), "type": "message", "role": "user", "content": "please fix the parser"},
        {"id": id("op-todo"), "type": "todo", "todos": [{"content": "write tests", "status": "pending"}, {"content": "fix", "status": "completed"}]}
    ]);
    app.ops_sync(&sid, ops).await;
    assert_eq!(seqs(&sid).await, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_single_chain(&sid, 7).await;
    let p = &app.project;
    assert_eq!(
        count(
            "MATCH (:Operation {project: $project})-[:PART_OF]->(:Session) RETURN count(*) AS n",
            p
        )
        .await,
        7
    );
    assert_eq!(
        count("MATCH (:Operation {id: $project + '-op-write'})-[:TRIGGERED_BY]->(:Operation {id: $project + '-op-read'}) RETURN count(*) AS n", p).await,
        1
    );
    assert_eq!(
        count("MATCH (:Operation {id: $project + '-op-read'})-[:TOUCHED {mode: 'read'}]->(f:File {project: $project, path: 'src/lib.rs'}) RETURN count(f) AS n", p).await,
        1,
        "absolute path under cwd became project-relative"
    );
    assert_eq!(
        count("MATCH (:Operation {id: $project + '-op-write'})-[:TOUCHED {mode: 'write'}]->(f:File {project: $project}) RETURN count(f) AS n", p).await,
        1,
        "equivalent paths are one file"
    );
    assert_eq!(
        count(
            "MATCH (o:Operation {project: $project}) WHERE o.tokens > 0 RETURN count(o) AS n",
            p
        )
        .await,
        7
    );
    let rows = store()
        .rows(
            neo4rs::query("MATCH (o:Operation {id: $id}) RETURN o.summary AS s, o.todos AS t")
                .param("id", id("op-todo")),
        )
        .await
        .unwrap();
    assert_eq!(
        rows[0].get::<String>("s").unwrap(),
        "todo list: 1/2 completed"
    );
    let todos: Value = serde_json::from_str(&rows[0].get::<String>("t").unwrap()).unwrap();
    assert_eq!(todos[0]["content"], "write tests");
}

#[tokio::test]
async fn resent_ids_store_one_node() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let id = |s: &str| format!("{}-{s}", app.project);
    let batch = json!([{"id": id("dup-1"), "type": "read", "summary": "a"}, {"id": id("dup-2"), "type": "read", "summary": "b"}]);
    app.ops_sync(&sid, batch.clone()).await;
    app.ops_sync(&sid, batch).await;
    app.ops_sync(&sid, json!([{"id": id("dup-1"), "type": "read", "summary": "a"}, {"id": id("dup-3"), "type": "read", "summary": "c"}])).await;
    assert_eq!(seqs(&sid).await, vec![1, 2, 3]);
    assert_single_chain(&sid, 3).await;
}

#[tokio::test]
async fn a_rejected_batch_writes_nothing_and_names_the_field() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let path = format!("/v1/sessions/{sid}/operations");
    let cases = [
        (
            json!([{"type": "read", "summary": "ok"}, {"type": "teleport", "summary": "x"}]),
            422,
            "unknown_operation_type",
            "operations[1].type",
        ),
        (
            json!([{"type": "read", "summary": "ok"}, {"type": "write", "summary": "x", "triggered_by": "ghost"}]),
            422,
            "unknown_triggered_by",
            "operations[1].triggered_by",
        ),
        (
            json!([{"type": "read"}]),
            400,
            "missing_field",
            "operations[0].summary",
        ),
        (
            json!([{"type": "read", "summary": "x".repeat(5000)}]),
            400,
            "field_too_large",
            "operations[0].summary",
        ),
        (
            json!([{"type": "message", "content": "hi"}]),
            400,
            "invalid_role",
            "operations[0].role",
        ),
        (
            json!([{"type": "read", "summary": "x", "informs_belief": "no-belief"}]),
            422,
            "unknown_belief",
            "operations[0].informs_belief",
        ),
        (
            json!([{"type": "read", "summary": "x", "at": "yesterday"}]),
            400,
            "invalid_timestamp",
            "operations[0].at",
        ),
        (json!([]), 400, "empty_batch", "operations"),
    ];
    for (ops, status, code, field) in cases {
        let (s, b) = app.post(&path, &json!({"operations": ops})).await;
        assert_eq!(s, status, "{b}");
        assert_eq!(b["error"]["code"], code, "{b}");
        assert_eq!(b["error"]["field"], field, "{b}");
    }
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"type": "read", "summary": format!("{i}")}))
        .collect();
    let (s, b) = app.post(&path, &json!({"operations": many})).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("too_many_operations"))
    );
    let (s, b) = app
        .post(
            "/v1/sessions/unknown-session/operations",
            &json!({"operations": [{"type": "read", "summary": "x"}]}),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("session_not_found"))
    );
    // Wait for anything (wrongly) spooled to land, then prove nothing was written.
    app.ops_sync(&sid, json!([{"type": "read", "summary": "marker"}]))
        .await;
    assert_eq!(
        count(
            "MATCH (o:Operation {project: $project}) RETURN count(o) AS n",
            &app.project
        )
        .await,
        1
    );
}

#[tokio::test]
async fn triggered_by_may_name_an_operation_still_in_the_spool() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let path = format!("/v1/sessions/{sid}/operations");
    let (cause, effect) = (
        format!("{}-cause", app.project),
        format!("{}-effect", app.project),
    );
    let (s, _) = app
        .post(
            &path,
            &json!({"operations": [{"id": cause, "type": "read", "summary": "a"}]}),
        )
        .await;
    assert_eq!(s, 202);
    app.ops_sync(
        &sid,
        json!([{"id": effect, "type": "write", "summary": "b", "triggered_by": cause}]),
    )
    .await;
    assert_eq!(count("MATCH (:Operation {id: $project + '-effect'})-[:TRIGGERED_BY]->(:Operation {id: $project + '-cause'}) RETURN count(*) AS n", &app.project).await, 1);
}

#[tokio::test]
async fn an_operation_id_is_a_global_idempotency_key() {
    let app = TestApp::spawn().await;
    let a = app.session().await;
    let b = app.session().await;
    let id = format!("{}-shared", app.project);
    app.ops_sync(&a, json!([{"id": id, "type": "read", "summary": "a"}]))
        .await;
    app.ops_sync(
        &b,
        json!([{"id": id, "type": "read", "summary": "b"}, {"type": "read", "summary": "c"}]),
    )
    .await;
    assert_eq!(seqs(&a).await, vec![1]);
    assert_eq!(
        seqs(&b).await,
        vec![1],
        "the resent id is not stored again; b's chain stays gap-free"
    );
    let n = count(
        "MATCH (o:Operation {project: $project}) WHERE o.summary = 'a' RETURN count(o) AS n",
        &app.project,
    )
    .await;
    assert_eq!(n, 1);
}

#[tokio::test]
async fn operations_inform_beliefs_with_effect_and_weight() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (s, b) = app.post("/v1/beliefs", &json!({"project": app.project, "content": "tests run faster with nextest", "category": "tooling", "conviction": 0.6})).await;
    assert_eq!(s, 200, "{b}");
    let belief = b["id"].as_str().unwrap().to_string();
    app.ops_sync(
        &sid,
        json!([
            {"type": "tool_call", "summary": "nextest run took 4s", "informs_belief": belief, "weight": 0.8},
            {"type": "tool_call", "summary": "nextest crashed", "informs_belief": belief, "effect": "contradicts", "weight": 0.3}
        ]),
    )
    .await;
    let (_, list) = app
        .get(&format!("/v1/beliefs?project={}", app.project))
        .await;
    let got = &list["beliefs"][0];
    assert_eq!(got["supporting"], 1);
    assert_eq!(got["contradicting"], 1);
    let c = got["conviction"].as_f64().unwrap();
    let expected = cairn::domain::conviction::conviction(0.6, 0, 1 << 40, 0.8, 0.3);
    assert!((c - expected).abs() < 0.01, "conviction {c} vs {expected}");
}

#[tokio::test]
async fn three_concurrent_writers_get_gap_free_seq_and_one_chain() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let mut tasks = Vec::new();
    for w in 0..3 {
        let client = app.client.clone();
        let url = app.url(&format!("/v1/sessions/{sid}/operations"));
        let p = app.project.clone();
        tasks.push(tokio::spawn(async move {
            for batch in 0..50 {
                let ops: Vec<Value> = (0..10)
                    .map(|i| json!({"id": format!("{p}-w{w}-b{batch}-{i}"), "type": "read", "summary": format!("writer {w} op {i}")}))
                    .collect();
                let r = client.post(&url).json(&json!({"operations": ops})).send().await.unwrap();
                assert_eq!(r.status().as_u16(), 202);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    app.ops_sync(&sid, json!([{"type": "read", "summary": "barrier"}]))
        .await;
    let s = seqs(&sid).await;
    assert_eq!(s, (1..=1501).collect::<Vec<i64>>());
    assert_single_chain(&sid, 1501).await;
    // Within one writer, arrival order is kept.
    let rows = store()
        .rows(neo4rs::query("MATCH (o:Operation {session_id: $s}) WHERE o.seq >= 0 AND o.id STARTS WITH $p RETURN o.id AS id ORDER BY o.seq").param("s", sid.as_str()).param("p", format!("{}-w0-", app.project)))
        .await
        .unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.get("id").unwrap()).collect();
    let pr: &str = &app.project;
    let expected: Vec<String> = (0..50)
        .flat_map(|b| (0..10).map(move |i| format!("{pr}-w0-b{b}-{i}")))
        .collect();
    assert_eq!(ids, expected);
}
