//! Capture load: concurrent clients, each posting batches of operations to its own session at
//! a steady rate, and a ledger of what became of every operation id. A batch that gets no
//! answer (or a retryable 5xx) is sent again with the same ids until it is answered; a batch
//! refused with `spool_full` is given up, as a client would drop or park it.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tokio::{sync::watch, task::JoinHandle};

use crate::quantile;

/// Pause before re-sending a batch that got no answer.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long a client keeps re-sending its last batch after the load is stopped.
const RESOLVE_WITHIN: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
pub struct LoadPlan {
    pub clients: usize,
    /// Operations per request.
    pub batch: usize,
    /// Requests per second per client.
    pub rate: f64,
}

/// One acknowledged request: when it was sent (since the scenario's clock started) and how
/// long the answer took.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    pub at: Duration,
    pub latency: Duration,
}

/// What became of every operation the clients sent.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Answered 202: durable, must end up in Neo4j exactly once.
    pub acked: Vec<String>,
    /// Answered 503 `spool_full`: nothing was accepted, must never appear.
    pub refused: Vec<String>,
    /// Answered 4xx: invalid, must never appear.
    pub rejected: Vec<String>,
    /// No definitive answer before the client gave up: may or may not be stored.
    pub unresolved: Vec<String>,
    pub acks: Vec<Ack>,
    /// Answers by status and error code (`202`, `503 spool_full`, `no answer`, …).
    pub answers: BTreeMap<String, u64>,
    /// Requests sent again with the same ids.
    pub resent: u64,
}

impl Ledger {
    fn merge(&mut self, other: Ledger) {
        self.acked.extend(other.acked);
        self.refused.extend(other.refused);
        self.rejected.extend(other.rejected);
        self.unresolved.extend(other.unresolved);
        self.acks.extend(other.acks);
        for (k, v) in other.answers {
            *self.answers.entry(k).or_default() += v;
        }
        self.resent += other.resent;
    }

    /// Acknowledged requests sent in `[from, to)`.
    pub fn acks_between(&self, from: Duration, to: Duration) -> impl Iterator<Item = &Ack> {
        self.acks.iter().filter(move |a| a.at >= from && a.at < to)
    }

    /// Count, p50 and p99 of the ack latency of requests sent in `[from, to)`.
    pub fn ack_latency(&self, from: Duration, to: Duration) -> (usize, Duration, Duration) {
        let mut l: Vec<Duration> = self.acks_between(from, to).map(|a| a.latency).collect();
        (l.len(), quantile(&mut l, 0.5), quantile(&mut l, 0.99))
    }

    /// Answers other than those in `allowed`, as `label × count`.
    pub fn unexpected_answers(&self, allowed: &[&str]) -> Vec<String> {
        self.answers
            .iter()
            .filter(|(k, _)| !allowed.contains(&k.as_str()))
            .map(|(k, v)| format!("{v} × {k}"))
            .collect()
    }
}

/// Running clients; [`Load::stop`] ends them and returns the merged ledger.
pub struct Load {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<Ledger>>,
    acked_ops: Arc<AtomicU64>,
}

impl Load {
    /// One client per session, posting to `base`.
    pub fn start(
        http: &reqwest::Client,
        base: &str,
        sessions: &[String],
        plan: LoadPlan,
        clock: Instant,
    ) -> Self {
        let (stop, _) = watch::channel(false);
        let acked_ops = Arc::new(AtomicU64::new(0));
        let tasks = sessions
            .iter()
            .map(|s| {
                let client = Client {
                    http: http.clone(),
                    url: format!("{base}/v1/sessions/{s}/operations"),
                    prefix: s.clone(),
                    plan,
                    clock,
                    acked_ops: acked_ops.clone(),
                };
                tokio::spawn(client.run(stop.subscribe()))
            })
            .collect();
        Self {
            stop,
            tasks,
            acked_ops,
        }
    }

    /// Operations acknowledged so far.
    pub fn acked_ops(&self) -> u64 {
        self.acked_ops.load(Ordering::Relaxed)
    }

    pub async fn stop(self) -> Ledger {
        self.stop.send_replace(true);
        let mut ledger = Ledger::default();
        for t in self.tasks {
            if let Ok(l) = t.await {
                ledger.merge(l);
            }
        }
        ledger
    }
}

/// What an answer means for the batch.
enum Fate {
    Acked,
    Refused,
    Rejected,
    Retry,
}

struct Client {
    http: reqwest::Client,
    url: String,
    prefix: String,
    plan: LoadPlan,
    clock: Instant,
    acked_ops: Arc<AtomicU64>,
}

impl Client {
    async fn run(self, mut stop: watch::Receiver<bool>) -> Ledger {
        let mut ledger = Ledger::default();
        let mut tick =
            tokio::time::interval(Duration::from_secs_f64(1.0 / self.plan.rate.max(0.01)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut batch = 0usize;
        let mut last_acked: Option<String> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => {}
            }
            if *stop.borrow() {
                return ledger;
            }
            let ids: Vec<String> = (0..self.plan.batch)
                .map(|i| format!("{}-b{batch}-{i}", self.prefix))
                .collect();
            let body = json!({ "operations": operations(&ids, batch, last_acked.as_deref()) });
            let mut give_up: Option<Instant> = None;
            loop {
                let at = self.clock.elapsed();
                let sent = Instant::now();
                let (label, fate) =
                    classify(self.http.post(&self.url).json(&body).send().await).await;
                let latency = sent.elapsed();
                *ledger.answers.entry(label).or_default() += 1;
                match fate {
                    Fate::Acked => {
                        self.acked_ops
                            .fetch_add(ids.len() as u64, Ordering::Relaxed);
                        last_acked = ids.last().cloned();
                        ledger.acked.extend(ids);
                        ledger.acks.push(Ack { at, latency });
                        break;
                    }
                    Fate::Refused => {
                        ledger.refused.extend(ids);
                        break;
                    }
                    Fate::Rejected => {
                        ledger.rejected.extend(ids);
                        break;
                    }
                    Fate::Retry => {
                        if *stop.borrow() {
                            let deadline =
                                *give_up.get_or_insert_with(|| Instant::now() + RESOLVE_WITHIN);
                            if Instant::now() >= deadline {
                                ledger.unresolved.extend(ids);
                                return ledger;
                            }
                        }
                        tokio::time::sleep(RETRY_PAUSE).await;
                        ledger.resent += 1;
                    }
                }
            }
            batch += 1;
        }
    }
}

async fn classify(answer: reqwest::Result<reqwest::Response>) -> (String, Fate) {
    let r = match answer {
        Ok(r) => r,
        Err(_) => return ("no answer".into(), Fate::Retry),
    };
    let status = r.status().as_u16();
    if status == 202 || status == 201 {
        let _ = r.bytes().await;
        return (status.to_string(), Fate::Acked);
    }
    let code = r
        .json::<Value>()
        .await
        .ok()
        .and_then(|b| b["error"]["code"].as_str().map(str::to_string))
        .unwrap_or_default();
    let fate = match (status, code.as_str()) {
        (503, "spool_full") => Fate::Refused,
        (400..=499, _) => Fate::Rejected,
        _ => Fate::Retry,
    };
    (format!("{status} {code}"), fate)
}

/// A batch that looks like an agent's work: reads, writes and tool calls on a few files, each
/// tool call triggered by the operation before it, and the first operation by the last one
/// the client had acknowledged (so some acknowledgements check a reference in Neo4j).
fn operations(ids: &[String], batch: usize, after: Option<&str>) -> Vec<Value> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let file = format!("src/module_{}.rs", (batch + i) % 23);
            match i % 4 {
                0 => json!({"id": id, "type": "read", "target": file, "tool": "Read",
                            "summary": format!("read {file} to see how batch {batch} is handled"),
                            "files_read": [file],
                            "triggered_by": if i == 0 { after } else { Some(ids[i - 1].as_str()) }}),
                1 => json!({"id": id, "type": "write", "target": file, "tool": "Edit",
                            "summary": format!("changed {file}: step {i} of batch {batch}"),
                            "files_modified": [file]}),
                2 => json!({"id": id, "type": "tool_call", "tool": "Bash", "target": "cargo test",
                            "summary": "ran the tests after the change", "triggered_by": ids[i - 1]}),
                _ => json!({"id": id, "type": "search", "tool": "Grep", "target": "fn handle",
                            "summary": format!("looked for callers of the code in {file}")}),
            }
        })
        .collect()
}
