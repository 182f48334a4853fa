//! Nothing acknowledged is lost: Neo4j going away mid-ingest, cairn SIGKILLed mid-ingest,
//! and a restart with a spool that Neo4j never saw.

use std::{collections::HashSet, process::Stdio, time::Duration};

use serde_json::{json, Value};

use crate::helpers::{
    client_with_key, count, eventually, mint_key, neo4j_proxy, split, store, Acked, Neo4jProxy,
    TestApp,
};

/// Sends batches until `stop` is set; returns the ids of every batch answered 202.
async fn ingest(
    client: reqwest::Client,
    url: String,
    prefix: String,
    stop: tokio::sync::watch::Receiver<bool>,
    counted: Acked,
) -> Vec<String> {
    let mut acked = Vec::new();
    let mut batch = 0;
    while !*stop.borrow() {
        let ids: Vec<String> = (0..20).map(|i| format!("{prefix}-{batch}-{i}")).collect();
        let ops: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "read", "summary": "ingest"}))
            .collect();
        match client
            .post(&url)
            .json(&json!({"operations": ops}))
            .send()
            .await
        {
            Ok(r) if r.status().as_u16() == 202 => {
                counted.add(ids.len());
                acked.extend(ids)
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
        batch += 1;
    }
    acked
}

async fn stored_ids(session: &str) -> (Vec<String>, Vec<i64>) {
    let query = || {
        neo4rs::query(
            "MATCH (o:Operation {session_id: $s}) WHERE o.seq >= 0 RETURN o.id AS id, o.seq AS seq ORDER BY seq",
        )
        .param("s", session)
    };
    // Several fault tests load Neo4j at once: ride out a slow moment.
    let mut rows = store().rows(query()).await;
    for _ in 0..3 {
        if rows.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        rows = store().rows(query()).await;
    }
    let rows = rows.unwrap();
    (
        rows.iter()
            .map(|r| r.get::<String>("id").unwrap())
            .collect(),
        rows.iter().map(|r| r.get::<i64>("seq").unwrap()).collect(),
    )
}

/// Sends `second`, triggered by `first`, to `session` (where `first` is spooled, maybe not yet
/// written); waits until both are in Neo4j, each exactly once.
async fn follow_up(
    app: &TestApp,
    client: &reqwest::Client,
    session: &str,
    first: &str,
    second: &str,
) {
    let r = client
        .post(app.url(&format!("/v1/sessions/{session}/operations")))
        .json(&json!({"operations": [{"id": second, "type": "tool_call", "summary": "a follow-up", "triggered_by": first}]}))
        .send()
        .await
        .unwrap();
    let (s, body) = split(r).await;
    assert_eq!(s, 202, "{body}");
    eventually(60, "both operations written", || async move {
        stored_ids(session).await.0.len() == 2
    })
    .await;
    assert_exactly_once(session, &[first.to_string(), second.to_string()]).await;
}

async fn assert_exactly_once(session: &str, acked: &[String]) {
    let (ids, seqs) = stored_ids(session).await;
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no operation stored twice");
    for id in acked {
        assert!(
            unique.contains(id),
            "acknowledged operation {id} is missing"
        );
    }
    assert_eq!(
        seqs,
        (1..=ids.len() as i64).collect::<Vec<_>>(),
        "seq stays gap-free"
    );
}

#[tokio::test]
async fn neo4j_outage_mid_ingest_loses_nothing() {
    let proxy = neo4j_proxy().await;
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::builder()
        .spool_dir(&dir.path().join("spool"))
        .behind(&proxy)
        .spawn()
        .await;
    let sid = app.session().await;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let counted = Acked::default();
    let task = tokio::spawn(ingest(
        app.client.clone(),
        app.url(&format!("/v1/sessions/{sid}/operations")),
        sid.clone(),
        stop_rx,
        counted.clone(),
    ));
    let at_cut = counted.more_than(0, 40, "40 operations acknowledged").await;
    proxy.cut();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let at_restore = counted
        .more_than(at_cut, 60, "60 more acknowledged while Neo4j is away")
        .await;
    proxy.restore();
    counted
        .more_than(at_restore, 40, "40 more acknowledged after it is back")
        .await;
    stop_tx.send_replace(true);
    let acked = task.await.unwrap();
    assert_eq!(acked.len(), counted.now(), "every 202 counted once");
    let n = acked.len() as i64;
    eventually(60, "every acknowledged operation written", || {
        let sid = sid.clone();
        async move { stored_ids(&sid).await.0.len() as i64 >= n }
    })
    .await;
    assert_exactly_once(&sid, &acked).await;
    app.stop().await;
}

/// An app on a spool in `dir`, behind a proxy, with one session started; then Neo4j is cut.
async fn cut_off(dir: &std::path::Path) -> (Neo4jProxy, TestApp, String) {
    let proxy = neo4j_proxy().await;
    let app = TestApp::builder()
        .spool_dir(&dir.join("spool"))
        .behind(&proxy)
        .spawn()
        .await;
    let sid = app.session().await;
    proxy.cut();
    (proxy, app, sid)
}

#[tokio::test]
async fn spool_written_while_neo4j_is_down_is_replayed_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let (proxy, app, sid) = cut_off(dir.path()).await;
    let url = format!("/v1/sessions/{sid}/operations");
    let mut acked = Vec::new();
    for b in 0..5 {
        let ids: Vec<String> = (0..10).map(|i| format!("{sid}-{b}-{i}")).collect();
        let ops: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "write", "summary": "offline"}))
            .collect();
        let (s, body) = app.post(&url, &json!({"operations": ops})).await;
        assert_eq!(
            s, 202,
            "capture keeps acknowledging while neo4j is down: {body}"
        );
        acked.extend(ids);
    }
    let (s, ready) = app.get("/readyz").await;
    assert_eq!(s, 503, "{ready}");
    assert!(ready["spool_bytes"].as_u64().unwrap() > 0);
    app.stop().await;
    assert_eq!(
        count(
            "MATCH (o:Operation {session_id: $project}) WHERE o.seq >= 0 RETURN count(o) AS n",
            &sid
        )
        .await,
        0
    );

    proxy.restore();
    let app = TestApp::builder()
        .spool_dir(&spool)
        .behind(&proxy)
        .spawn()
        .await;
    eventually(60, "spool replayed", || {
        let sid = sid.clone();
        async move { stored_ids(&sid).await.0.len() >= 50 }
    })
    .await;
    assert_exactly_once(&sid, &acked).await;
    app.stop().await;
}

/// `cairn serve` on a port it picks itself, and that port, read from its "serving" log line
/// (a port probed beforehand could be taken by another process before cairn binds it).
async fn cairn_serve(spool: &std::path::Path) -> (tokio::process::Child, u16) {
    use tokio::io::AsyncBufReadExt;
    let verbose = std::env::var("TEST_LOG").is_ok();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["serve", "--bind", "127.0.0.1:0", "--spool-dir"])
        .arg(spool)
        // No vectors: an embedding indexer would embed every other test's sessions.
        .args(["--embed", "off"])
        .env("CAIRN_NEO4J_URI", crate::helpers::neo4j_uri())
        .env("CAIRN_LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn cairn");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    // One reader for the whole run: it hands over the port, and keeps the pipe drained (a
    // full pipe would stop cairn).
    let (port_tx, port_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut port_tx = Some(port_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            if verbose {
                eprintln!("{line}");
            }
            if port_tx.is_some() {
                let event: Value = serde_json::from_str(&line).unwrap_or_default();
                if event["message"] == "cairn serving" {
                    let port = event["port"].as_u64().expect("the port it serves on") as u16;
                    let _ = port_tx.take().expect("checked").send(port);
                }
            }
        }
    });
    let port = tokio::time::timeout(Duration::from_secs(60), port_rx)
        .await
        .expect("cairn serving within 60 s")
        .expect("cairn exited before serving");
    (child, port)
}

#[tokio::test]
async fn sigkill_mid_ingest_then_restart_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let client =
        crate::helpers::client_with_key(&crate::helpers::mint_key(&project, "write").await);
    let (mut child, port) = cairn_serve(&spool).await;
    let base = format!("http://127.0.0.1:{port}");
    eventually(60, "cairn up", || {
        let (c, u) = (client.clone(), format!("{base}/readyz"));
        async move { c.get(u).send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    let r = client
        .post(format!("{base}/v1/sessions"))
        .json(&json!({"project": project}))
        .send()
        .await
        .unwrap();
    // 201 once in Neo4j, 202 once only in the spool: either way the kill must not lose it.
    let status = r.status().as_u16();
    assert!(status == 201 || status == 202, "start session: {status}");
    let sid = r.json::<Value>().await.unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let counted = Acked::default();
    let task = tokio::spawn(ingest(
        client.clone(),
        format!("{base}/v1/sessions/{sid}/operations"),
        sid.clone(),
        stop_rx,
        counted.clone(),
    ));
    counted
        .more_than(0, 100, "some batches acknowledged before the kill")
        .await;
    child.start_kill().unwrap(); // SIGKILL, mid-ingest
    child.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop_tx.send_replace(true);
    let acked = task.await.unwrap();
    assert_eq!(acked.len(), counted.now(), "every 202 counted once");

    // A new process on a new port: what matters is the spool it finds.
    let (mut child, _) = cairn_serve(&spool).await;
    let n = acked.len();
    eventually(
        60,
        "every acknowledged operation written after restart",
        || {
            let sid = sid.clone();
            async move { stored_ids(&sid).await.0.len() >= n }
        },
    )
    .await;
    assert_exactly_once(&sid, &acked).await;
    child.start_kill().unwrap();
    let _ = child.wait().await;
}

#[tokio::test]
async fn after_a_restart_spooled_sessions_and_operations_are_known_before_neo4j_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let (proxy, app, busy) = cut_off(dir.path()).await;
    // A backlog the writer needs a while to replay …
    for b in 0..100 {
        let ops: Vec<Value> = (0..100)
            .map(|i| json!({"id": format!("{busy}-{b}-{i}"), "type": "read", "summary": "backlog"}))
            .collect();
        let (s, body) = app
            .post(
                &format!("/v1/sessions/{busy}/operations"),
                &json!({"operations": ops}),
            )
            .await;
        assert_eq!(s, 202, "{body}");
    }
    // … then a session and an operation that Neo4j has not seen either.
    let late = format!("{busy}-late");
    let (s, body) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "session_id": late}),
        )
        .await;
    assert_eq!(s, 202, "{body}");
    let first = format!("{late}-first");
    let (s, body) = app
        .post(
            &format!("/v1/sessions/{late}/operations"),
            &json!({"operations": [{"id": first, "type": "read", "summary": "spooled"}]}),
        )
        .await;
    assert_eq!(s, 202, "{body}");
    let client = app.client.clone();
    app.stop().await;

    proxy.restore();
    let app = TestApp::builder()
        .spool_dir(&spool)
        .behind(&proxy)
        .spawn()
        .await;
    // While the writer replays the backlog, the late session and its operation are known.
    let second = format!("{late}-second");
    follow_up(&app, &client, &late, &first, &second).await;
    let edges = store()
        .rows(
            neo4rs::query("MATCH (:Operation {id: $a})-[r:TRIGGERED_BY]->(:Operation {id: $b}) RETURN count(r) AS n")
                .param("a", second.as_str())
                .param("b", first.as_str()),
        )
        .await
        .unwrap();
    assert_eq!(edges[0].get::<i64>("n").unwrap(), 1);
    app.stop().await;
}

#[tokio::test]
async fn a_known_key_keeps_capturing_while_neo4j_is_away_past_its_recheck_time() {
    let proxy = neo4j_proxy().await;
    let app = TestApp::builder()
        .behind(&proxy)
        .with(|s| s.key_recheck_secs = 1)
        .spawn()
        .await;
    let sid = app.session().await;
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let url = format!("/v1/sessions/{sid}/operations");
    let mut acked = Vec::new();
    for b in 0..3 {
        let id = format!("{sid}-{b}");
        let (s, body) = app
            .post(
                &url,
                &json!({"operations": [{"id": id, "type": "read", "summary": "offline"}]}),
            )
            .await;
        assert_eq!(s, 202, "the key is still trusted: {body}");
        acked.push(id);
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    // A key never seen cannot be verified while Neo4j is away.
    let stranger = client_with_key(&mint_key(&app.project, "write").await);
    let r = stranger
        .post(app.url(&url))
        .json(&json!({"operations": [{"type": "read", "summary": "who"}]}))
        .send()
        .await
        .unwrap();
    let (s, body) = split(r).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (503, Some("neo4j_unavailable"))
    );
    proxy.restore();
    eventually(30, "offline captures written", || {
        let sid = sid.clone();
        async move { stored_ids(&sid).await.0.len() == 3 }
    })
    .await;
    assert_exactly_once(&sid, &acked).await;
    app.stop().await;
}

/// The capture writer dead-letters a record only when Neo4j refused the statement itself;
/// these are the errors a real Neo4j gives for that, and what a slow Neo4j gives instead.
#[tokio::test]
async fn neo4j_refusals_are_rejections_and_a_slow_neo4j_is_not() {
    let store = crate::helpers::store();
    let syntax = store
        .run(neo4rs::query("MATCH (n RETURN n"))
        .await
        .unwrap_err();
    let runtime = store
        .rows(neo4rs::query("UNWIND [1] AS x RETURN x / 0 AS y"))
        .await
        .unwrap_err();
    for refused in [syntax, runtime] {
        assert!(
            refused.is_rejection() && !refused.is_unavailable(),
            "{refused}"
        );
    }

    let proxy = crate::helpers::neo4j_proxy().await;
    let mut settings = TestApp::builder().behind(&proxy).settings().neo4j.clone();
    settings.timeout_ms = 2000;
    let slow = cairn::graph::Store::connect(&settings).unwrap();
    slow.run(neo4rs::query("RETURN 1")).await.unwrap();
    proxy.set_delay(Duration::from_secs(8));
    let late = slow.run(neo4rs::query("RETURN 1")).await.unwrap_err();
    assert!(late.is_unavailable() && !late.is_rejection(), "{late}");
}

/// Two transactions locking two nodes in opposite orders: Neo4j breaks the deadlock by
/// failing one with a transient error, the kind cairn sends an autocommit statement again for.
#[tokio::test]
async fn a_deadlock_is_a_transient_error() {
    let store = crate::helpers::store();
    let (a, b) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    let both = |cypher: &str| {
        neo4rs::query(cypher)
            .param("a", a.as_str())
            .param("b", b.as_str())
    };
    store
        .run(both(
            "CREATE (:DeadlockProbe {id: $a}), (:DeadlockProbe {id: $b})",
        ))
        .await
        .unwrap();
    let lock = |id: &str| {
        neo4rs::query("MATCH (n:DeadlockProbe {id: $id}) SET n.v = coalesce(n.v, 0) + 1")
            .param("id", id)
    };
    let mut first = store.begin().await.unwrap();
    let mut second = store.begin().await.unwrap();
    first.run(lock(&a)).await.unwrap();
    second.run(lock(&b)).await.unwrap();
    let second_target = lock(&a);
    let waiting = tokio::spawn(async move {
        let out = second.run(second_target).await;
        (out, second)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let closing = first.run(lock(&b)).await;
    let (waited, second) = waiting.await.unwrap();
    let failed: Vec<_> = [&closing, &waited]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
        .collect();
    assert_eq!(failed.len(), 1, "{closing:?} / {waited:?}");
    let err = failed[0];
    assert!(
        err.is_transient() && err.is_conflict() && !err.is_rejection(),
        "{err}"
    );
    let _ = (first.rollback().await, second.rollback().await);
    store
        .run(both(
            "MATCH (n:DeadlockProbe) WHERE n.id IN [$a, $b] DELETE n",
        ))
        .await
        .unwrap();
}

/// The writer's state as `/readyz` reports it.
async fn writer_state(app: &TestApp) -> String {
    let (_, ready) = app.get("/readyz").await;
    ready["writer"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn writes_do_not_wait_for_a_neo4j_the_writer_cannot_reach() {
    let proxy = neo4j_proxy().await;
    // Without the writer's state, every write below would wait the whole ten minutes.
    let app = TestApp::builder()
        .behind(&proxy)
        .with(|s| s.sync_wait_ms = 600_000)
        .spawn()
        .await;
    let sid = app.session().await;
    assert_eq!(writer_state(&app).await, "writing");
    proxy.cut();
    let (s, body) = app
        .post(
            &format!("/v1/sessions/{sid}/operations"),
            &json!({"operations": [{"id": format!("{sid}-1"), "type": "read", "summary": "offline"}]}),
        )
        .await;
    assert_eq!(s, 202, "{body}");
    eventually(60, "the writer noticed neo4j is gone", || async {
        writer_state(&app).await == "retrying"
    })
    .await;

    let quick = Duration::from_secs(60);
    let late = format!("{sid}-late");
    let (s, body) = tokio::time::timeout(
        quick,
        app.post(
            "/v1/sessions",
            &json!({"project": app.project, "session_id": late}),
        ),
    )
    .await
    .expect("a session start answers while neo4j is away");
    assert_eq!((s, &body["applied"]), (202, &json!(false)), "{body}");
    let (s, body) = tokio::time::timeout(
        quick,
        app.post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": late, "kind": "fact", "content": "spooled"}),
        ),
    )
    .await
    .expect("a memory answers while neo4j is away");
    assert_eq!(s, 202, "{body}");

    proxy.restore();
    eventually(60, "the writer is back", || async {
        writer_state(&app).await == "writing"
    })
    .await;
    // With the writer back, a write waits for Neo4j again.
    let (s, body) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": late, "kind": "lesson", "content": "applied"}),
        )
        .await;
    assert_eq!((s, &body["applied"]), (201, &json!(true)), "{body}");
    assert_eq!(
        count(
            "MATCH (m:Memory)-[:ASSERTED_IN]->(:Session {id: $project}) RETURN count(m) AS n",
            &late
        )
        .await,
        2
    );
    app.stop().await;
}

/// A spool left by an earlier version, its records plain JSON, is replayed after an upgrade;
/// what the new version spools (compressed) follows it in the same session.
#[tokio::test]
async fn a_spool_of_plain_json_records_left_by_an_earlier_version_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let session = format!("{project}-s");
    let old = format!("{session}-old");
    let operation = |id: &str| {
        json!({
            "id": id, "type": "read", "target": "src/lib.rs", "summary": "read before the upgrade",
            "tool": null, "files_read": ["src/lib.rs"], "files_modified": [], "triggered_by": null,
            "informs_belief": null, "effect": "supports", "weight": 1.0, "rationale": null,
            "role": null, "content": null, "todos": null, "status": "ok", "context": null,
            "at": 1_750_000_000_000i64
        })
    };
    let records = [
        json!({"command": "start_session", "id": session, "project": project, "agent": "claude-code",
               "task": "upgrade", "continues": null, "cwd": null, "at": 1_750_000_000_000i64}),
        json!({"command": "operations", "project": project, "session_id": session,
               "operations": [operation(&old)]}),
    ];
    {
        let spool = cairn::capture::spool::Spool::open(&spool_dir, 1 << 20, 64 * 1024).unwrap();
        for record in records {
            let text = serde_json::to_vec(&record).unwrap();
            assert!(
                cairn::capture::command::Command::decode(&text).is_ok(),
                "{record}"
            );
            spool.append(text).await.unwrap();
        }
    }
    let app = TestApp::builder().spool_dir(&spool_dir).spawn().await;
    let client = client_with_key(&mint_key(&project, "write").await);
    let new = format!("{session}-new");
    follow_up(&app, &client, &session, &old, &new).await;
    assert_eq!(stored_ids(&session).await.0, [old, new], "log order kept");
    app.stop().await;
}
