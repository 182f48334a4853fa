//! What every fault scenario shares: its own directory (spool and the child's log), an
//! optional proxy in front of Neo4j, the `cairn serve` child, a fresh project with one session
//! per client; at the end the load stopped, the spool drained, the exactly-once check, the
//! figures every scenario reports, and cleanup.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::{json, Value};

use super::clients::{Ledger, Load, LoadPlan};
use super::probe::{Probe, Samples};
use super::verify::{self, Check};
use super::{millis, FaultsArgs, Report, Scenario};
use cairn::graph::Store;
use cairn_testkit::child::{ServeChild, ServeOptions};
use cairn_testkit::proxy::Neo4jProxy;

/// How long the spool may take to drain once the load has stopped and the fault is lifted.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);
/// Progress lines while a phase lasts.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub struct Harness {
    /// Every time in a scenario is measured from here.
    pub clock: Instant,
    pub proxy: Option<Neo4jProxy>,
    pub child: ServeChild,
    pub http: reqwest::Client,
    pub base: String,
    pub project: String,
    /// One per client.
    pub sessions: Vec<String>,
    /// Straight to Neo4j, never through the proxy.
    pub store: Store,
    /// The admin key the clients use, revoked at the end.
    key_id: String,
    plan: LoadPlan,
    dir: PathBuf,
    keep: bool,
}

/// Everything a scenario measured, once the load is over and the spool empty.
pub struct Finished {
    pub ledger: Ledger,
    pub samples: Samples,
    pub check: Check,
    /// When the clients were stopped.
    pub stopped_at: Duration,
    /// From then until the spool was empty and Neo4j ready.
    pub drained_after: Duration,
}

/// An HTTP client holding a new admin key of `project` (made as `cairn keys create` makes one),
/// and the key's id.
async fn client_with_key(
    store: &Store,
    project: &str,
    clients: usize,
) -> anyhow::Result<(reqwest::Client, String)> {
    let key = cairn::auth::mint();
    cairn::graph::keys::create(
        store,
        &cairn::graph::keys::NewKey {
            id: &key.id,
            project,
            scope: "admin",
            hash: &key.hash,
            label: Some("bench faults"),
            actor: "bench",
        },
    )
    .await
    .context("could not store an API key; is Neo4j running? (scripts/neo4j-local start)")?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", key.token).parse()?,
    );
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(clients)
        .timeout(Duration::from_secs(10))
        .build()?;
    Ok((http, key.id))
}

impl Harness {
    /// Starts the child (through a proxy when `proxied`) with `serve_args`, and the sessions.
    pub async fn start(
        args: &FaultsArgs,
        scenario: Scenario,
        proxied: bool,
        serve_args: Vec<String>,
    ) -> anyhow::Result<Self> {
        let run = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let dir = std::env::temp_dir().join(format!("cairn-faults-{}-{run}", scenario.name()));
        std::fs::create_dir_all(&dir)?;
        let proxy = match proxied {
            true => Some(Neo4jProxy::start(&args.neo4j.uri).await?),
            false => None,
        };
        let mut neo4j = args.neo4j.clone();
        if let Some(p) = &proxy {
            neo4j.uri = p.uri().to_string();
        }
        let mut options = ServeOptions::new(&args.cairn.path()?, &dir.join("spool"), &neo4j)?;
        options.insecure = false;
        options.args.extend(serve_args);
        options.log_level = args.child_log.clone();
        options.log_file = Some(dir.join("cairn.log"));
        let child = ServeChild::spawn(options)?;
        let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
        let project = format!("faults-{}-{run}", scenario.name());
        let (http, key_id) = client_with_key(&store, &project, args.clients).await?;
        child
            .wait_ready(&http, Duration::from_secs(60))
            .await
            .context("is Neo4j running? (scripts/neo4j-local start)")?;
        let mut h = Self {
            clock: Instant::now(),
            proxy,
            base: child.base.clone(),
            child,
            http,
            project,
            sessions: Vec::new(),
            store,
            key_id,
            plan: LoadPlan {
                clients: args.clients,
                batch: args.batch,
                rate: args.rate,
            },
            dir,
            keep: args.keep,
        };
        for c in 0..args.clients {
            let id = format!("{}-c{c}", h.project);
            h.start_session(&id, &format!("capture client {c}")).await?;
            h.sessions.push(id);
        }
        h.clock = Instant::now();
        Ok(h)
    }

    pub fn proxy(&self) -> &Neo4jProxy {
        self.proxy
            .as_ref()
            .expect("this scenario runs through the proxy")
    }

    pub fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .json(body)
            .send()
            .await?;
        Ok((r.status().as_u16(), r.json().await.unwrap_or_default()))
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, Value)> {
        let r = self.http.get(format!("{}{path}", self.base)).send().await?;
        Ok((r.status().as_u16(), r.json().await.unwrap_or_default()))
    }

    pub async fn start_session(&self, id: &str, task: &str) -> anyhow::Result<()> {
        let (status, body) = self
            .post(
                "/v1/sessions",
                &json!({"project": self.project, "session_id": id, "agent": "bench", "task": task}),
            )
            .await?;
        anyhow::ensure!(
            status == 201 || status == 202,
            "starting a session answered {status}: {body}"
        );
        Ok(())
    }

    pub fn load(&self) -> Load {
        Load::start(
            &self.http,
            &self.base,
            &self.sessions,
            self.plan,
            self.clock,
        )
    }

    pub fn probe(&self) -> anyhow::Result<Probe> {
        Probe::start(&self.base, self.clock)
    }

    /// Lets `secs` pass with a progress line now and then.
    pub async fn hold(&self, secs: u64, phase: &str, load: &Load, probe: &Probe) {
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            tokio::time::sleep(PROGRESS_EVERY.min(until - Instant::now())).await;
            eprintln!(
                "  {phase}: t={:.0}s, {} operations acknowledged, spool {} bytes",
                self.now().as_secs_f64(),
                load.acked_ops(),
                probe.spool_bytes().unwrap_or(0)
            );
        }
    }

    /// Time from now until Neo4j holds `ops` operations of the project (the backlog acknowledged
    /// so far has been written), polling; `None` past the drain limit.
    pub async fn written(&self, ops: u64) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < DRAIN_LIMIT {
            if crate::written_operations(&self.store, &self.project)
                .await
                .is_ok_and(|n| n as u64 >= ops)
            {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Stops the load and the probes, waits until the spool is empty, and checks Neo4j.
    pub async fn finish(&mut self, load: Load, probe: Probe) -> anyhow::Result<Finished> {
        let ledger = load.stop().await;
        let stopped_at = self.now();
        eprintln!("  load stopped; waiting for the spool to drain …");
        let drained_after = self.drained().await?;
        let samples = probe.stop().await;
        let check = verify::exactly_once(&self.store, &self.project, &self.sessions, &ledger)
            .await
            .context("the exactly-once check could not read Neo4j")?;
        Ok(Finished {
            ledger,
            samples,
            check,
            stopped_at,
            drained_after,
        })
    }

    async fn drained(&self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        loop {
            if let Ok((200, body)) = self.get("/readyz").await {
                if body["spool_bytes"].as_u64() == Some(0) {
                    return Ok(started.elapsed());
                }
            }
            anyhow::ensure!(
                started.elapsed() < DRAIN_LIMIT,
                "the spool did not drain within {DRAIN_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Messages of the child's ERROR log lines, each once, with how often it was logged.
    fn log_errors(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.join("cairn.log")).unwrap_or_default();
        let mut seen: Vec<(String, usize)> = Vec::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["level"] != "ERROR" {
                continue;
            }
            let msg = v["message"].as_str().unwrap_or(line).to_string();
            match seen.iter_mut().find(|(m, _)| *m == msg) {
                Some((_, n)) => *n += 1,
                None => seen.push((msg, 1)),
            }
        }
        seen.into_iter()
            .map(|(m, n)| format!("{n} × {m}"))
            .collect()
    }

    /// Adds what every scenario reports (the ledger, the check, the drain, the child's errors)
    /// and their violations; `allowed` are the answers this fault may legitimately cause
    /// besides 202.
    pub fn report_common(&self, report: &mut Report, f: &Finished, allowed: &[&str]) {
        let l = &f.ledger;
        let c = &f.check;
        let (requests, p50, p99) = l.ack_latency(Duration::ZERO, f.stopped_at);
        report.add("clients", self.plan.clients);
        report.add("acked_requests", requests);
        report.add("ack_p50_ms", millis(p50));
        report.add("ack_p99_ms", millis(p99));
        let mut all: Vec<Duration> = l.acks.iter().map(|a| a.latency).collect();
        report.add("ack_max_ms", millis(crate::quantile(&mut all, 1.0)));
        report.add("resent_requests", l.resent);
        report.add("answers", json!(l.answers));
        report.add("acked_ops", c.acked_ops);
        report.add("refused_ops", l.refused.len() + l.rejected.len());
        report.add("stored_ops", c.stored_ops);
        report.add("missing_ops", c.missing);
        report.add("duplicate_ops", c.duplicates);
        report.add("refused_ops_stored", c.refused_stored);
        report.add("unacked_ops_stored", c.unacked_stored);
        report.add("broken_seq_chains", c.broken_chains);
        report.add("drain_after_load_stopped_ms", millis(f.drained_after));
        let errors = self.log_errors();
        report.add("child_log_errors", json!(errors));
        report.violations.extend(c.violations());
        let mut ok: Vec<&str> = vec!["202"];
        ok.extend(allowed);
        for a in l.unexpected_answers(&ok) {
            report
                .violations
                .push(format!("unexpected capture answer: {a}"));
        }
    }

    /// Purges the project and removes the directory, unless asked to keep them or the
    /// scenario failed; stops the child either way (once the purge is applied).
    pub async fn close(mut self, report: &Report) {
        let keep = self.keep || !report.passed();
        if !keep {
            let purged = async {
                let r = self
                    .http
                    .delete(format!("{}/v1/projects/{}", self.base, self.project))
                    .timeout(DRAIN_LIMIT)
                    .send()
                    .await?;
                anyhow::ensure!(r.status().is_success(), "the purge answered {}", r.status());
                self.drained().await.map(|_| ())
            };
            if let Err(err) = purged.await {
                eprintln!("  could not purge project {}: {err:#}", self.project);
            }
            let revoked =
                cairn::graph::keys::revoke(&self.store, &self.project, &self.key_id, "bench").await;
            if let Err(err) = revoked {
                eprintln!(
                    "  could not revoke the bench's API key {}: {err}",
                    self.key_id
                );
            }
        }
        let _ = self.child.kill().await;
        if keep {
            eprintln!(
                "  kept project {} and {} (spool, cairn.log)",
                self.project,
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
