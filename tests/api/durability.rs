//! Nothing acknowledged is lost: Neo4j going away mid-ingest, cairn SIGKILLed mid-ingest,
//! and a restart with a spool that Neo4j never saw.

use std::{collections::HashSet, process::Stdio, time::Duration};

use serde_json::{json, Value};

use crate::helpers::{count, eventually, neo4j_proxy, spawn_with, store};

/// Sends batches until `stop` is set; returns the ids of every batch answered 202.
async fn ingest(
    client: reqwest::Client,
    url: String,
    prefix: String,
    stop: tokio::sync::watch::Receiver<bool>,
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
            Ok(r) if r.status().as_u16() == 202 => acked.extend(ids),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
        batch += 1;
    }
    acked
}

async fn stored_ids(session: &str) -> (Vec<String>, Vec<i64>) {
    let rows = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {session_id: $s}) RETURN o.id AS id, o.seq AS seq ORDER BY seq",
            )
            .param("s", session),
        )
        .await
        .unwrap();
    (
        rows.iter()
            .map(|r| r.get::<String>("id").unwrap())
            .collect(),
        rows.iter().map(|r| r.get::<i64>("seq").unwrap()).collect(),
    )
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
    let app = spawn_with(&dir.path().join("spool"), Some(proxy.uri())).await;
    let sid = app.session().await;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(ingest(
        app.client.clone(),
        app.url(&format!("/v1/sessions/{sid}/operations")),
        sid.clone(),
        stop_rx,
    ));
    tokio::time::sleep(Duration::from_millis(700)).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_secs(3)).await;
    proxy.restore();
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop_tx.send_replace(true);
    let acked = task.await.unwrap();
    assert!(
        acked.len() > 100,
        "ingest kept being acknowledged: {}",
        acked.len()
    );
    let n = acked.len() as i64;
    eventually(60, "every acknowledged operation written", || {
        let sid = sid.clone();
        async move { stored_ids(&sid).await.0.len() as i64 >= n }
    })
    .await;
    assert_exactly_once(&sid, &acked).await;
    app.stop().await;
}

#[tokio::test]
async fn spool_written_while_neo4j_is_down_is_replayed_after_restart() {
    let proxy = neo4j_proxy().await;
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let app = spawn_with(&spool, Some(proxy.uri())).await;
    let sid = app.session().await;
    proxy.cut();
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
            "MATCH (o:Operation {session_id: $project}) RETURN count(o) AS n",
            &sid
        )
        .await,
        0
    );

    proxy.restore();
    let app = spawn_with(&spool, Some(proxy.uri())).await;
    eventually(60, "spool replayed", || {
        let sid = sid.clone();
        async move { stored_ids(&sid).await.0.len() >= 50 }
    })
    .await;
    assert_exactly_once(&sid, &acked).await;
    app.stop().await;
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn cairn_serve(port: u16, spool: &std::path::Path) -> tokio::process::Child {
    let verbose = std::env::var("TEST_LOG").is_ok();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--spool-dir",
        ])
        .arg(spool)
        .env("CAIRN_NEO4J_URI", crate::helpers::neo4j_uri())
        .stdout(Stdio::null())
        .stderr(if verbose {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true)
        .spawn()
        .expect("spawn cairn")
}

#[tokio::test]
async fn sigkill_mid_ingest_then_restart_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let client =
        crate::helpers::client_with_key(&crate::helpers::mint_key(&project, "write").await);
    let mut child = cairn_serve(port, &spool);
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
    assert_eq!(r.status().as_u16(), 201);
    let sid = r.json::<Value>().await.unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(ingest(
        client.clone(),
        format!("{base}/v1/sessions/{sid}/operations"),
        sid.clone(),
        stop_rx,
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    child.start_kill().unwrap(); // SIGKILL
    child.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop_tx.send_replace(true);
    let acked = task.await.unwrap();
    assert!(
        acked.len() >= 20,
        "some batches were acknowledged before the kill"
    );

    let mut child = cairn_serve(port, &spool);
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
