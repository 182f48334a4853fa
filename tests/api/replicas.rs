//! More than one cairn on one Neo4j: leases and claims in the graph, and several real
//! `cairn serve` processes writing one session, killed mid-ingest, and running the scheduled
//! extraction at the same instant (the LLM faked at the HTTP boundary, its calls counted there).

use std::{collections::HashSet, path::Path, time::Duration};

use cairn::graph::lease::{self, LeaseState};
use cairn_testkit::child::{ServeChild, ServeOptions};
use cairn_testkit::llm_stub::LlmStub;
use serde_json::{json, Value};

use crate::helpers::{count, eventually, schema_once, store, Acked, TestApp};

fn cairn_exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cairn"))
}

/// `n` replicas of `cairn serve` (no API keys, a spool each in `dir`) started with `args`,
/// ready.
async fn replicas(n: usize, dir: &Path, args: &[String]) -> Vec<ServeChild> {
    replicas_on(&cairn_testkit::app::neo4j_settings(), n, dir, args).await
}

/// [`replicas`] on `neo4j`.
async fn replicas_on(
    neo4j: &cairn::config::Neo4jSettings,
    n: usize,
    dir: &Path,
    args: &[String],
) -> Vec<ServeChild> {
    schema_once().await;
    let mut out = Vec::new();
    for i in 0..n {
        let mut options =
            ServeOptions::new(cairn_exe(), &dir.join(format!("spool-{i}")), neo4j).unwrap();
        if args.iter().any(|a| a == "--embed") {
            options.args.clear();
        }
        options.args.extend(args.iter().cloned());
        if std::env::var("TEST_LOG").is_ok() {
            options.log_level = "info".into();
        }
        out.push(ServeChild::spawn(options).unwrap());
    }
    let http = reqwest::Client::new();
    for r in &out {
        r.wait_ready(&http, Duration::from_secs(60)).await.unwrap();
    }
    out
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn start_session(http: &reqwest::Client, base: &str, project: &str) -> String {
    let r = http
        .post(format!("{base}/v1/sessions"))
        .json(&json!({"project": project, "task": "replicas"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "start session: {}", r.status());
    r.json::<Value>().await.unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A session started through `base`, holding one user message per text (acknowledged); its id.
async fn session_of_notes(
    http: &reqwest::Client,
    base: &str,
    project: &str,
    texts: &[String],
) -> String {
    let session = start_session(http, base, project).await;
    let ops: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({"id": format!("{session}-{i}"), "type": "message", "role": "user",
                   "summary": "note", "content": text})
        })
        .collect();
    let r = post_operations(http, base, &session, &ops).await;
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    session
}

/// `ops` written to `session` through `base`.
async fn post_operations(
    http: &reqwest::Client,
    base: &str,
    session: &str,
    ops: &[Value],
) -> reqwest::Response {
    http.post(format!("{base}/v1/sessions/{session}/operations"))
        .json(&json!({"operations": ops}))
        .send()
        .await
        .unwrap()
}

/// `cairn serve` flags for an embeddings endpoint at `server`, model `fake`, passes every
/// 100 ms; then `extra`.
fn embedding_args(server: &wiremock::MockServer, extra: &[&str]) -> Vec<String> {
    let url = format!("{}/v1", server.uri());
    let mut args = vec![
        "--embed",
        "on",
        "--embed-base-url",
        &url,
        "--embed-model",
        "fake",
        "--search-index-every-ms",
        "100",
    ];
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// The session's operations as (id, seq), and its FOLLOWS edges as (seq, predecessor seq).
async fn chain(session: &str) -> (Vec<(String, i64)>, Vec<(i64, i64)>) {
    let ops = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {session_id: $s}) RETURN o.id AS id, o.seq AS seq ORDER BY seq",
            )
            .param("s", session),
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<String>("id").unwrap(), r.get::<i64>("seq").unwrap()))
        .collect();
    let follows = store()
        .rows(
            neo4rs::query(
                "MATCH (o:Operation {session_id: $s})-[:FOLLOWS]->(p:Operation) \
                 RETURN o.seq AS seq, p.seq AS prev ORDER BY seq",
            )
            .param("s", session),
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<i64>("seq").unwrap(), r.get::<i64>("prev").unwrap()))
        .collect();
    (ops, follows)
}

/// seq 1..=n with no gap and every operation following the one before: one unbranched chain.
fn assert_one_chain(ops: &[(String, i64)], follows: &[(i64, i64)]) {
    let n = ops.len() as i64;
    let seqs: Vec<i64> = ops.iter().map(|(_, s)| *s).collect();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "seq 1..{n}, gap-free");
    let unique: HashSet<&String> = ops.iter().map(|(id, _)| id).collect();
    assert_eq!(unique.len(), ops.len(), "no operation stored twice");
    let expected: Vec<(i64, i64)> = (2..=n).map(|s| (s, s - 1)).collect();
    assert_eq!(
        follows, expected,
        "each operation follows its predecessor once"
    );
}

/// Sends `count` operations in batches of `batch`, each batch to the next replica in turn;
/// returns the ids acknowledged with 202.
async fn write_spread(
    bases: Vec<String>,
    session: String,
    client_no: usize,
    count: usize,
    batch: usize,
) -> Vec<String> {
    let http = client();
    let mut acked = Vec::new();
    for (b, chunk) in (0..count).collect::<Vec<_>>().chunks(batch).enumerate() {
        let ids: Vec<String> = chunk
            .iter()
            .map(|i| format!("{session}-c{client_no}-{i}"))
            .collect();
        let ops: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "read", "summary": "spread"}))
            .collect();
        let base = &bases[(b + client_no) % bases.len()];
        let r = post_operations(&http, base, &session, &ops).await;
        assert_eq!(r.status().as_u16(), 202, "{}", r.text().await.unwrap());
        acked.extend(ids);
    }
    acked
}

#[tokio::test]
async fn three_replicas_three_clients_one_session_make_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let reps = replicas(3, dir.path(), &[]).await;
    let bases: Vec<String> = reps.iter().map(|r| r.base.clone()).collect();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let session = start_session(&client(), &bases[0], &project).await;
    let writers: Vec<_> = (0..3)
        .map(|c| tokio::spawn(write_spread(bases.clone(), session.clone(), c, 500, 5)))
        .collect();
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert_eq!(acked.len(), 1500);
    eventually(120, "1500 operations in Neo4j", || {
        let s = session.clone();
        async move { chain(&s).await.0.len() >= 1500 }
    })
    .await;
    let (ops, follows) = chain(&session).await;
    assert_eq!(ops.len(), 1500);
    assert_one_chain(&ops, &follows);
    for r in reps {
        r.stop().await;
    }
}

/// Like [`write_spread`], until `stop`; a batch a dead replica refuses is not acknowledged.
/// Each acknowledged batch is counted in `counted` as it is acknowledged.
async fn write_until(
    bases: Vec<String>,
    session: String,
    client_no: usize,
    stop: tokio::sync::watch::Receiver<bool>,
    counted: Acked,
) -> Vec<String> {
    let http = client();
    let mut acked = Vec::new();
    let mut b = 0;
    while !*stop.borrow() {
        let ids: Vec<String> = (0..10)
            .map(|i| format!("{session}-c{client_no}-{b}-{i}"))
            .collect();
        let ops: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "read", "summary": "until"}))
            .collect();
        let base = &bases[(b + client_no) % bases.len()];
        match http
            .post(format!("{base}/v1/sessions/{session}/operations"))
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
        b += 1;
    }
    acked
}

#[tokio::test]
async fn a_replica_killed_mid_ingest_and_restarted_keeps_every_acknowledged_operation_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut reps = replicas(3, dir.path(), &[]).await;
    let bases: Vec<String> = reps.iter().map(|r| r.base.clone()).collect();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let session = start_session(&client(), &bases[0], &project).await;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let counted = Acked::default();
    let writers: Vec<_> = (0..3)
        .map(|c| {
            tokio::spawn(write_until(
                bases.clone(),
                session.clone(),
                c,
                stop_rx.clone(),
                counted.clone(),
            ))
        })
        .collect();
    let at_kill = counted
        .more_than(0, 100, "100 operations acknowledged")
        .await;
    reps[1].kill().await.unwrap(); // SIGKILL, mid-ingest
    counted
        .more_than(at_kill, 100, "100 more acknowledged by the replicas left")
        .await;
    stop_tx.send_replace(true);
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert_eq!(acked.len(), counted.now(), "every 202 counted once");
    // Same port, same spool: what it acknowledged before dying is replayed from there.
    reps[1].restart().unwrap();
    reps[1]
        .wait_ready(&client(), Duration::from_secs(60))
        .await
        .unwrap();
    let n = acked.len();
    let acked_set: HashSet<String> = acked.into_iter().collect();
    eventually(120, "every acknowledged operation in Neo4j", || {
        let (s, acked) = (session.clone(), acked_set.clone());
        async move {
            let (ops, _) = chain(&s).await;
            let stored: HashSet<&String> = ops.iter().map(|(id, _)| id).collect();
            acked.iter().all(|id| stored.contains(id))
        }
    })
    .await;
    let (ops, follows) = chain(&session).await;
    assert!(ops.len() >= n);
    assert_one_chain(&ops, &follows);
    for r in reps {
        r.stop().await;
    }
}

#[tokio::test]
async fn sigterm_drains_the_spool_into_neo4j_before_the_process_ends() {
    let proxy = crate::helpers::neo4j_proxy().await;
    let dir = tempfile::tempdir().unwrap();
    schema_once().await;
    let mut neo4j = cairn_testkit::app::neo4j_settings();
    neo4j.uri = proxy.uri().to_string();
    neo4j.timeout_ms = 2_000;
    let options = ServeOptions::new(cairn_exe(), &dir.path().join("spool"), &neo4j).unwrap();
    let mut rep = ServeChild::spawn(options).unwrap();
    rep.wait_ready(&client(), Duration::from_secs(60))
        .await
        .unwrap();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let session = start_session(&client(), &rep.base, &project).await;
    eventually(30, "the session in Neo4j", || async {
        count(
            "MATCH (s:Session {project: $project}) RETURN count(s) AS n",
            &project,
        )
        .await
            == 1
    })
    .await;
    // Neo4j out of reach: what is acknowledged now stays in the spool.
    proxy.cut();
    let acked = write_spread(vec![rep.base.clone()], session.clone(), 0, 200, 20).await;
    assert_eq!(
        chain(&session).await.0.len(),
        0,
        "nothing written while cut off"
    );
    let restore = async {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        proxy.restore();
    };
    let (status, _) = tokio::join!(rep.terminate(Duration::from_secs(60)), restore);
    assert!(
        status.unwrap().success(),
        "cairn serve exits cleanly after draining"
    );
    // No restart: the stopping process wrote everything itself.
    let (ops, follows) = chain(&session).await;
    let stored: HashSet<&String> = ops.iter().map(|(id, _)| id).collect();
    assert!(
        acked.iter().all(|id| stored.contains(id)),
        "every acknowledged operation written"
    );
    assert_one_chain(&ops, &follows);
}

#[tokio::test]
async fn one_holder_at_a_time_and_an_expired_lease_is_taken_over() {
    schema_once().await;
    let store = store();
    let name = format!("test-lease-{}", uuid::Uuid::new_v4().simple());
    // Eight replicas asking at once: one gets it.
    let asks: Vec<_> = (0..8)
        .map(|i| {
            let (store, name) = (store.clone(), name.clone());
            tokio::spawn(async move {
                lease::acquire(&store, &name, &format!("r{i}"), 1_500, Some(1))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut held = 0;
    for a in asks {
        if a.await.unwrap() == LeaseState::Held {
            held += 1;
        }
    }
    assert_eq!(held, 1, "exactly one of eight holds the lease");
    let holder: String = store
        .rows(neo4rs::query("MATCH (l:Lease {name: $n}) RETURN l.holder AS h").param("n", &*name))
        .await
        .unwrap()[0]
        .get("h")
        .unwrap();
    let other = if holder == "r0" { "r1" } else { "r0" };
    assert_eq!(
        lease::acquire(&store, &name, &holder, 1_500, Some(1))
            .await
            .unwrap(),
        LeaseState::Held,
        "the holder renews it"
    );
    assert_eq!(
        lease::acquire(&store, &name, other, 1_500, Some(1))
            .await
            .unwrap(),
        LeaseState::Busy
    );
    // The holder stops renewing (it died): after expiry another takes the tick over.
    tokio::time::sleep(Duration::from_millis(1_700)).await;
    assert_eq!(
        lease::acquire(&store, &name, other, 1_500, Some(1))
            .await
            .unwrap(),
        LeaseState::Held
    );
    assert!(!lease::release(&store, &name, &holder, Some(1))
        .await
        .unwrap());
    assert!(lease::release(&store, &name, other, Some(1)).await.unwrap());
    // Tick 1 is done: nobody runs it again; tick 2 is new work.
    assert_eq!(
        lease::acquire(&store, &name, "late", 1_500, Some(1))
            .await
            .unwrap(),
        LeaseState::Done
    );
    assert_eq!(
        lease::acquire(&store, &name, "late", 1_500, Some(2))
            .await
            .unwrap(),
        LeaseState::Held
    );
}

#[tokio::test]
async fn the_idle_sweep_runs_under_a_lease_another_replica_cannot_take() {
    // An idle time of its own, so the lease is this app's alone.
    let idle_secs = 100_000 + (uuid::Uuid::new_v4().as_u128() % 1_000_000) as u64;
    let app = TestApp::builder()
        .with(move |s| {
            s.abandon_sweep_secs = 1;
            s.abandon_after_secs = idle_secs;
        })
        .spawn()
        .await;
    let name = format!("abandon_sweep:{idle_secs}");
    // `count` binds its argument as `$project`: here, the lease's suffix.
    eventually(30, "the sweeper holds its lease", || async {
        count(
            "MATCH (l:Lease) WHERE l.name = 'abandon_sweep:' + $project AND l.holder IS NOT NULL \
             RETURN count(l) AS n",
            &idle_secs.to_string(),
        )
        .await
            == 1
    })
    .await;
    assert_eq!(
        lease::acquire(&store(), &name, "another-replica", 3_000, None)
            .await
            .unwrap(),
        LeaseState::Busy,
        "a second replica does not sweep meanwhile"
    );
    app.stop().await;
    // Stopping lets go of it: another replica takes over at once.
    assert_eq!(
        lease::acquire(&store(), &name, "another-replica", 3_000, None)
            .await
            .unwrap(),
        LeaseState::Held
    );
}

/// `n` closed sessions of `app`'s project, each with a few operations; their ids.
async fn closed_sessions(app: &TestApp, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let sid = app.session().await;
        let ops: Vec<Value> = (0..3)
            .map(|k| {
                json!({"id": format!("{sid}-{k}"), "type": "write", "target": format!("src/m{i}.rs"),
                       "summary": format!("changed module {i}"), "files_modified": [format!("src/m{i}.rs")]})
            })
            .collect();
        app.ops_sync(&sid, json!(ops)).await;
        let (status, body) = app
            .post(
                &format!("/v1/sessions/{sid}/close"),
                &json!({"summary": format!("module {i} changed")}),
            )
            .await;
        assert!((200..300).contains(&status), "close: {status} {body}");
        ids.push(sid);
    }
    eventually(60, "sessions closed in Neo4j", || async {
        count(
            "MATCH (s:Session {project: $project, status: 'closed'}) RETURN count(s) AS n",
            &app.project,
        )
        .await
            == n as i64
    })
    .await;
    ids
}

async fn extracted(project: &str) -> i64 {
    count(
        "MATCH (s:Session {project: $project}) WHERE size(coalesce(s.extracted_versions, [])) > 0 \
         RETURN count(s) AS n",
        project,
    )
    .await
}

/// A cron expression (with seconds) for the instant `at` (UTC).
fn cron_at(at: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Timelike;
    format!("{} {} {} * * *", at.second(), at.minute(), at.hour())
}

fn schedule_args(llm: &LlmStub, project: &str, at: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    [
        "--extract-schedule",
        &cron_at(at),
        "--extract-schedule-project",
        project,
        "--llm-base-url",
        llm.base_url(),
        "--llm-concurrency",
        "2",
        "--extract-claim-ttl-secs",
        "1",
        "--extract-lease-ttl-secs",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[tokio::test]
async fn three_scheduled_replicas_and_a_manual_run_send_each_session_to_the_llm_once() {
    let llm = LlmStub::start(Duration::from_secs(5)).await.unwrap();
    llm.slow_down(Duration::from_millis(250));
    let app = TestApp::spawn().await;
    let sessions = closed_sessions(&app, 8).await;
    let dir = tempfile::tempdir().unwrap();
    let due = chrono::Utc::now() + chrono::Duration::seconds(8);
    let reps = replicas(3, dir.path(), &schedule_args(&llm, &app.project, due)).await;
    let wait = (due - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    // By hand, at the same instant: `cairn extract` from cron or a CronJob.
    let manual = tokio::process::Command::new(cairn_exe())
        .args(["extract", "--project", &app.project, "--concurrency", "2"])
        .env("CAIRN_NEO4J_URI", crate::helpers::neo4j_uri())
        .env("CAIRN_LLM_BASE_URL", llm.base_url())
        .env("CAIRN_EXTRACT_CLAIM_TTL_SECS", "1")
        .stdout(std::process::Stdio::null())
        .output();
    let manual = tokio::time::timeout(Duration::from_secs(60), manual)
        .await
        .expect("cairn extract finishes")
        .unwrap();
    // A failed run says which session failed and why in its log.
    assert!(
        manual.status.success(),
        "cairn extract: {}\n{}",
        manual.status,
        String::from_utf8_lossy(&manual.stderr)
    );
    eventually(60, "every session extracted", || async {
        extracted(&app.project).await == sessions.len() as i64
    })
    .await;
    // Let any straggler call arrive before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = llm.calls_by_session();
    for s in &sessions {
        assert_eq!(calls.get(s), Some(&1), "LLM calls about {s}: {calls:?}");
    }
    assert_eq!(
        calls.values().sum::<u64>(),
        sessions.len() as u64,
        "{calls:?}"
    );
    for r in reps {
        r.stop().await;
    }
    app.stop().await;
}

#[tokio::test]
async fn a_replica_killed_holding_the_lease_hands_the_run_over_after_expiry() {
    let llm = LlmStub::start(Duration::from_secs(5)).await.unwrap();
    llm.slow_down(Duration::from_millis(700));
    let app = TestApp::spawn().await;
    let sessions = closed_sessions(&app, 6).await;
    let dir = tempfile::tempdir().unwrap();
    let due = chrono::Utc::now() + chrono::Duration::seconds(8);
    let mut args = schedule_args(&llm, &app.project, due);
    let at = args.iter().position(|a| a == "--llm-concurrency").unwrap();
    args[at + 1] = "1".into();
    let mut reps = replicas(3, dir.path(), &args).await;
    let lease_name = format!("extract:{}", app.project);
    // Wait for the run to be under way, then kill whoever holds the lease.
    eventually(30, "the scheduled run calls the LLM", || async {
        llm.calls_by_session().values().sum::<u64>() >= 1
    })
    .await;
    let holder: String = store()
        .rows(
            neo4rs::query("MATCH (l:Lease {name: $n}) RETURN l.holder AS h")
                .param("n", &*lease_name),
        )
        .await
        .unwrap()[0]
        .get("h")
        .unwrap();
    let pid: u32 = holder.split(':').nth(1).unwrap().parse().unwrap();
    let victim = reps
        .iter()
        .position(|r| r.pid() == Some(pid))
        .expect("the holder is one of the replicas");
    reps[victim].kill().await.unwrap();
    let killed_at = std::time::Instant::now();
    assert!(
        extracted(&app.project).await < sessions.len() as i64,
        "the run was cut off before its end"
    );
    eventually(60, "every session extracted by another replica", || async {
        extracted(&app.project).await == sessions.len() as i64
    })
    .await;
    assert!(
        killed_at.elapsed() >= Duration::from_secs(2),
        "the run went on only after the lease expired"
    );
    eventually(
        30,
        "the tick recorded done by the replica that took over",
        || async {
            count(
                "MATCH (l:Lease {name: 'extract:' + $project}) \
             WHERE l.holder IS NULL AND l.done_tick IS NOT NULL RETURN count(l) AS n",
                &app.project,
            )
            .await
                == 1
        },
    )
    .await;
    let calls = llm.calls_by_session();
    for s in &sessions {
        let n = calls.get(s).copied().unwrap_or(0);
        assert!((1..=2).contains(&n), "LLM calls about {s}: {calls:?}");
    }
    // One session at a time: only the one in flight at the kill may be sent again.
    assert!(
        calls.values().sum::<u64>() <= sessions.len() as u64 + 1,
        "{calls:?}"
    );
    for r in reps {
        r.stop().await;
    }
    app.stop().await;
}

#[tokio::test]
async fn the_replicas_benchmark_lands_every_operation_of_each_scenario() {
    use clap::Parser;
    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        bench: cairn_bench::replicas::ReplicasArgs,
    }
    schema_once().await;
    let uri = crate::helpers::neo4j_uri();
    let args = Args::parse_from([
        "test",
        "--operations",
        "1600",
        "--batch",
        "50",
        "--clients",
        "16",
        "--replicas",
        "2",
        "--neo4j-uri",
        uri.as_str(),
        "--cairn-bin",
        env!("CARGO_BIN_EXE_cairn"),
    ])
    .bench;
    let rows = cairn_bench::replicas::run(args)
        .await
        .expect("the bench runs");
    let shape: Vec<(usize, usize, usize)> = rows
        .iter()
        .map(|r| (r.replicas, r.sessions, r.operations))
        .collect();
    assert_eq!(shape, vec![(1, 16, 1600), (2, 16, 1600), (2, 1, 1600)]);
    for r in &rows {
        assert!(
            r.ops_per_sec > 0.0
                && r.ack_p99_ms >= r.ack_p50_ms
                && r.in_neo4j_after_s >= r.acked_after_s,
            "{r:?}"
        );
    }
}

const BOOKMARK: &str = "X-Cairn-Bookmark";

async fn post_json(http: &reqwest::Client, url: String, body: &Value) -> reqwest::Response {
    http.post(url).json(body).send().await.unwrap()
}

/// The bookmarks an answer carried, checked against the rule a request's header must meet.
fn answered_bookmarks(r: &reqwest::Response) -> Option<String> {
    let value = r.headers().get(BOOKMARK)?.to_str().unwrap().to_string();
    let parsed = cairn::graph::causal::Bookmarks::parse(&value).unwrap();
    assert!(!parsed.is_empty(), "{value}");
    Some(value)
}

/// `count` read operations with ids `<session>-<tag>-<i>`.
fn reads(session: &str, tag: &str, count: usize) -> (Vec<String>, Value) {
    let ids: Vec<String> = (0..count).map(|i| format!("{session}-{tag}-{i}")).collect();
    let ops = ids
        .iter()
        .map(
            |id| json!({"id": id, "type": "read", "target": "src/lib.rs", "summary": "bookmarked"}),
        )
        .collect();
    (ids, Value::Array(ops))
}

/// The operation ids a reconstruction shows.
fn reconstructed(body: &Value) -> Vec<String> {
    body["operations"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_sync_write_answers_a_bookmark_a_second_replica_reads_after_through_a_routing_uri() {
    let dir = tempfile::tempdir().unwrap();
    let mut neo4j = cairn_testkit::app::neo4j_settings();
    neo4j.uri = crate::routing::routing_uri();
    assert!(neo4j.uri.starts_with("neo4j://"), "{}", neo4j.uri);
    let reps = replicas_on(&neo4j, 2, dir.path(), &[]).await;
    let (writer, reader) = (&reps[0].base, &reps[1].base);
    let http = client();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());

    let r = post_json(
        &http,
        format!("{writer}/v1/sessions"),
        &json!({"project": project, "task": "bookmarks"}),
    )
    .await;
    // 201 once in Neo4j, with its bookmark; 202 (Neo4j slower than the sync wait) with none.
    let started = match r.status().as_u16() {
        201 => answered_bookmarks(&r).expect("a session answered 201 carries its bookmark"),
        202 => {
            assert!(r.headers().get(BOOKMARK).is_none(), "a 202 commits nothing");
            String::new()
        }
        other => panic!("start session: {other}"),
    };
    let session = r.json::<Value>().await.unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let (ids, ops) = reads(&session, "sync", 3);
    let r = post_json(
        &http,
        format!("{writer}/v1/sessions/{session}/operations?sync=true"),
        &json!({"operations": ops}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let written = answered_bookmarks(&r).expect("a sync write answered 201 carries a bookmark");
    assert_ne!(written, started, "each commit has a bookmark of its own");

    // The other replica, asked with the bookmark, reads what the first one wrote.
    let r = http
        .get(format!(
            "{reader}/v1/sessions/{session}/reconstruction?project={project}"
        ))
        .header(BOOKMARK, &written)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers().get(BOOKMARK).is_none(),
        "a read commits nothing"
    );
    assert_eq!(reconstructed(&r.json().await.unwrap()), ids);

    // Both bookmarks at once, as a client that wrote twice sends them.
    let r = http
        .get(format!("{reader}/v1/sessions/{session}?project={project}"))
        .header(
            BOOKMARK,
            [started.as_str(), written.as_str()]
                .iter()
                .filter(|b| !b.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["id"], session.as_str());

    // A write only spooled (202) is not in Neo4j yet: no bookmark to hand out.
    let (_, ops) = reads(&session, "spooled", 1);
    let r = post_json(
        &http,
        format!("{writer}/v1/sessions/{session}/operations"),
        &json!({"operations": ops}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 202);
    assert!(r.headers().get(BOOKMARK).is_none());
}

#[tokio::test]
async fn a_malformed_or_unknown_bookmark_is_refused_with_the_header_named() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let path = format!("/v1/sessions/{sid}/reconstruction");
    let too_many = (0..=cairn::graph::causal::MAX_BOOKMARKS)
        .map(|i| format!("FB:b{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let malformed = [
        "FB:a b".to_string(),
        "abc".to_string(),
        "neo4j:bookmark:v1:tx1".to_string(),
        "FB:a,,FB:b".to_string(),
        "<script>".to_string(),
        format!(
            "FB:{}",
            "a".repeat(cairn::graph::causal::MAX_BOOKMARK_CHARS)
        ),
        too_many,
    ];
    // Well-formed, but not ones Neo4j issued: Neo4j refuses them, and so does cairn.
    let unknown = ["FB:notABookmark".to_string(), "FB:AAAA".to_string()];
    for (bad, shaped) in malformed
        .iter()
        .map(|b| (b, false))
        .chain(unknown.iter().map(|b| (b, true)))
    {
        assert_eq!(
            cairn::graph::causal::Bookmarks::parse(bad).is_ok(),
            shaped,
            "{bad}"
        );
        let r = app
            .client
            .get(app.url(&path))
            .header(BOOKMARK, bad)
            .send()
            .await
            .unwrap();
        let (status, body) = crate::helpers::split(r).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "invalid_bookmark", "{body}");
        assert_eq!(body["error"]["field"], BOOKMARK, "{body}");
    }
    app.stop().await;
}

#[tokio::test]
async fn over_bolt_writes_answer_bookmarks_and_reads_after_them_work() {
    let app = TestApp::spawn().await;
    assert!(
        cairn_testkit::app::neo4j_uri().starts_with("bolt://"),
        "the default test server is reached over bolt://"
    );
    let sid = app.session().await;
    let (ids, ops) = reads(&sid, "bolt", 2);
    let r = app
        .client
        .post(app.url(&format!("/v1/sessions/{sid}/operations?sync=true")))
        .json(&json!({"operations": ops}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let written = answered_bookmarks(&r).expect("bolt:// writes answer bookmarks too");
    let r = app
        .client
        .get(app.url(&format!("/v1/sessions/{sid}/reconstruction")))
        .header(BOOKMARK, &written)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(reconstructed(&r.json().await.unwrap()), ids);
    // And without the header, as before.
    let (status, body) = app.get(&format!("/v1/sessions/{sid}/reconstruction")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(reconstructed(&body), ids);
    app.stop().await;
}

#[tokio::test]
async fn the_read_path_sends_statements_in_read_mode() {
    schema_once().await;
    let label = format!("ReadModeProbe{}", uuid::Uuid::new_v4().simple());
    for uri in [
        cairn_testkit::app::neo4j_uri(),
        crate::routing::routing_uri(),
    ] {
        let mut settings = cairn_testkit::app::neo4j_settings();
        settings.uri = uri.clone();
        let s = cairn::graph::Store::connect(&settings).unwrap();
        let read = s
            .read()
            .rows(neo4rs::query("RETURN 41 + 1 AS n"))
            .await
            .unwrap();
        assert_eq!(read[0].get::<i64>("n").unwrap(), 42, "{uri}");
        // A write sent down the read path is refused: the server was told it is a read.
        let write = s
            .read()
            .rows(neo4rs::query(&format!("CREATE (n:{label}) RETURN n")))
            .await;
        assert!(write.is_err(), "{uri}: a write went through the read path");
    }
    let created = store()
        .rows(neo4rs::query(&format!(
            "MATCH (n:{label}) RETURN count(n) AS n"
        )))
        .await
        .unwrap();
    assert_eq!(created[0].get::<i64>("n").unwrap(), 0);
}

/// Two replicas with one embeddings model work one queue: a session is claimed by the replica
/// that embeds it, so each of its turns, and each version of its search document, reaches the
/// endpoint once, not once per replica. The endpoint (faked at the HTTP boundary) answers this
/// test's texts slowly, so the replicas' passes overlap.
#[tokio::test]
async fn two_replicas_embed_each_turn_and_document_once() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use wiremock::{matchers, Mock, MockServer, Request};

    let _turn = cairn_testkit::embed::embedding_turn().await;
    let marker = format!("m{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let server = MockServer::start().await;
    let (mine, counted) = (marker.clone(), seen.clone());
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/embeddings"))
        .respond_with(move |req: &Request| {
            let texts = cairn_testkit::embed::inputs(req);
            let ours: Vec<&String> = texts.iter().filter(|t| t.contains(&mine)).collect();
            for t in &ours {
                *counted.lock().unwrap().entry(t.to_string()).or_default() += 1;
            }
            let answer = cairn_testkit::embed::embeddings_answer(req);
            if ours.is_empty() {
                answer
            } else {
                answer.set_delay(Duration::from_millis(1_500))
            }
        })
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let args = embedding_args(&server, &[]);
    let reps = replicas(2, dir.path(), &args).await;
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let http = client();
    let mut texts = Vec::new();
    for s in 0..3 {
        let mine: Vec<String> = (0..12)
            .map(|i| format!("{marker} note {s}-{i}: the gauge {i} reads fine"))
            .collect();
        session_of_notes(&http, &reps[s % 2].base, &project, &mine).await;
        texts.extend(mine);
    }
    eventually(90, "every turn and every search document embedded", || async {
        let turns = count(
            "MATCH (o:Operation {project: $project}) WHERE o.embedding IS NOT NULL RETURN count(o) AS n",
            &project,
        );
        let docs = count(
            "MATCH (s:Session {project: $project}) WHERE s.embedding IS NOT NULL \
             AND NOT s.embed_pending AND NOT coalesce(s.search_dirty, false) RETURN count(s) AS n",
            &project,
        );
        turns.await == texts.len() as i64 && docs.await == 3
    })
    .await;
    // A pass that overlapped would still be waiting on its slow answer: give it time to land.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let seen = seen.lock().unwrap().clone();
    for t in &texts {
        // The turn as sent (a message's vector is made without its speaker's label); a
        // session's search document holds several turns and is not counted.
        let times: u32 = seen
            .iter()
            .filter(|(k, _)| *k == t || k.ends_with(&format!(": {t}")))
            .map(|(_, n)| *n)
            .sum();
        assert_eq!(times, 1, "{t} embedded {times} times: {seen:?}");
    }
    // What holds several turns is a session's search document: each of its texts once.
    let docs: Vec<(&String, &u32)> = seen
        .iter()
        .filter(|(k, _)| k.matches(marker.as_str()).count() > 1)
        .collect();
    assert!(docs.len() >= 3, "a document per session: {seen:?}");
    for (doc, times) in docs {
        assert_eq!(*times, 1, "a search document embedded {times} times: {doc}");
    }
    for r in reps {
        r.stop().await;
    }
}

/// A replica that cannot reach its embeddings endpoint holds no session back from one that
/// can: what the first failed on once, the second embeds at once, not after the retry time
/// that the failure set (a minute here).
#[tokio::test]
async fn a_replica_without_its_endpoint_holds_no_session_back() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use wiremock::{matchers, Mock, MockServer, Request, ResponseTemplate};

    type Seen = Arc<Mutex<HashMap<String, Instant>>>;
    /// Notes when each of this test's texts first reached an endpoint.
    fn note(seen: &Seen, marker: &str, req: &Request) {
        let now = Instant::now();
        let mut seen = seen.lock().unwrap();
        for t in cairn_testkit::embed::inputs(req) {
            if t.contains(marker) {
                seen.entry(t).or_insert(now);
            }
        }
    }
    let _turn = cairn_testkit::embed::embedding_turn().await;
    let marker = format!("m{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let (refused, embedded): (Seen, Seen) = Default::default();
    /// An embeddings endpoint that notes this test's texts in `seen`, then answers.
    async fn endpoint(
        seen: &Seen,
        marker: &str,
        answer: fn(&Request) -> ResponseTemplate,
    ) -> MockServer {
        let server = MockServer::start().await;
        let (seen, marker) = (seen.clone(), marker.to_string());
        Mock::given(matchers::method("POST"))
            .and(matchers::path("/v1/embeddings"))
            .respond_with(move |req: &Request| {
                note(&seen, &marker, req);
                answer(req)
            })
            .mount(&server)
            .await;
        server
    }
    let down = endpoint(&refused, &marker, |_| {
        ResponseTemplate::new(503).set_body_string("upstream unavailable")
    })
    .await;
    let up = endpoint(&embedded, &marker, cairn_testkit::embed::embeddings_answer).await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let once = ["--embed-attempts", "1", "--embed-retry-ms", "60000"];
    let mut reps = replicas(1, &a, &embedding_args(&down, &once)).await;
    reps.extend(replicas(1, &b, &embedding_args(&up, &once)).await);
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let http = client();
    // Sessions one at a time, until the replica without its endpoint has failed on some: the
    // two replicas race for each.
    let mut written = 0;
    for s in 0..12 {
        let texts: Vec<String> = (0..3)
            .map(|i| format!("{marker} note {s}-{i}: the valve {i} holds"))
            .collect();
        session_of_notes(&http, &reps[s % 2].base, &project, &texts).await;
        written += 3;
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        if refused.lock().unwrap().len() >= 3 {
            break;
        }
    }
    assert!(
        !refused.lock().unwrap().is_empty(),
        "the replica without its endpoint never took a session"
    );
    eventually(120, "every turn embedded", || async {
        count(
            "MATCH (o:Operation {project: $project}) WHERE o.embedding IS NOT NULL RETURN count(o) AS n",
            &project,
        )
        .await
            == written
    })
    .await;
    let (refused, embedded) = (
        refused.lock().unwrap().clone(),
        embedded.lock().unwrap().clone(),
    );
    let mut compared = 0;
    for (text, failed_at) in &refused {
        // A search document may be rebuilt between the two; the turns are what they were.
        let Some(done_at) = embedded.get(text) else {
            continue;
        };
        compared += 1;
        let waited = done_at.saturating_duration_since(*failed_at);
        assert!(
            waited < Duration::from_secs(60),
            "{text:?} was embedded {waited:?} after the other replica failed on it"
        );
    }
    assert!(compared > 0, "refused {refused:?}, embedded {embedded:?}");
    for r in reps {
        r.stop().await;
    }
}
