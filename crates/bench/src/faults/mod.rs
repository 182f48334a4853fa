//! `cairn-bench faults`: what holds under faults, with figures. Each scenario runs capture load
//! (concurrent clients posting operation batches to a real `cairn serve` child process),
//! injects one fault, lifts it, lets the spool drain, and ends with the exactly-once check
//! against Neo4j: every acknowledged operation stored once, nothing refused stored, each
//! session's `seq`/`FOLLOWS` chain gap-free.
//!
//! - `neo4j-outage`: Neo4j unreachable (through [`cairn_testkit::proxy`]) for a while.
//! - `sigkill`: the server SIGKILLed under load and restarted on the same spool.
//! - `spool-full`: Neo4j unreachable with a small spool quota: `503 spool_full`.
//! - `llm-faults`: an extraction run against an LLM stub that fails, rate-limits and hangs.
//! - `slow-neo4j`: every Neo4j round trip slowed down.
//!
//! Layout: [`clients`] (load and its ledger), [`probe`] (`/healthz`, `/readyz` sampling),
//! [`verify`] (the check), [`harness`] (set-up and tear-down), [`scenarios`] and [`llm`] (the
//! faults); the misbehaving LLM is the test kit's [`cairn_testkit::llm_stub`].

pub mod clients;
pub mod harness;
pub mod llm;
pub mod probe;
pub mod scenarios;
pub mod verify;

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use cairn::config::Neo4jSettings;

#[derive(Args, Debug, Clone)]
pub struct FaultsArgs {
    /// Scenarios to run, comma-separated; all by default.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub scenario: Vec<Scenario>,
    /// Concurrent capture clients (each with its own session).
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Operations per capture request.
    #[arg(long, default_value_t = 20)]
    pub batch: usize,
    /// Capture requests per second per client.
    #[arg(long, default_value_t = 10.0)]
    pub rate: f64,
    /// Seconds of load before the fault (and between two kills).
    #[arg(long, default_value_t = 5)]
    pub warmup_seconds: u64,
    /// Seconds Neo4j stays unreachable (neo4j-outage, spool-full).
    #[arg(long, default_value_t = 30)]
    pub outage_seconds: u64,
    /// Seconds of load after the fault is lifted.
    #[arg(long, default_value_t = 5)]
    pub after_seconds: u64,
    /// SIGKILLs in the sigkill scenario.
    #[arg(long, default_value_t = 3)]
    pub kills: usize,
    /// Spool quota (bytes) in the spool-full scenario.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub spool_max_bytes: u64,
    /// Delay the proxy adds to every chunk Neo4j sends, in the slow-neo4j scenario.
    #[arg(long, default_value_t = 3000)]
    pub delay_ms: u64,
    /// Seconds Neo4j stays slow (slow-neo4j).
    #[arg(long, default_value_t = 20)]
    pub slow_seconds: u64,
    /// Closed sessions the extraction run analyses (llm-faults).
    #[arg(long, default_value_t = 12)]
    pub llm_sessions: usize,
    /// cairn's LLM request timeout in llm-faults; hanging stub answers come 1 s after it.
    #[arg(long, default_value_t = 2)]
    pub llm_timeout_secs: u64,
    /// `RUST_LOG` of the cairn child; its log is `cairn.log` in the scenario's directory.
    #[arg(long, default_value = "warn")]
    pub child_log: String,
    /// Keep projects and scenario directories (always kept when a scenario fails).
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    Neo4jOutage,
    Sigkill,
    SpoolFull,
    LlmFaults,
    SlowNeo4j,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Self::Neo4jOutage,
        Self::Sigkill,
        Self::SpoolFull,
        Self::LlmFaults,
        Self::SlowNeo4j,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Neo4jOutage => "neo4j-outage",
            Self::Sigkill => "sigkill",
            Self::SpoolFull => "spool-full",
            Self::LlmFaults => "llm-faults",
            Self::SlowNeo4j => "slow-neo4j",
        }
    }
}

/// One scenario's figures (named with their units) and what did not hold.
#[derive(Debug)]
pub struct Report {
    pub scenario: Scenario,
    pub figures: Vec<(&'static str, Value)>,
    pub violations: Vec<String>,
}

impl Report {
    pub fn new(scenario: Scenario) -> Self {
        Self {
            scenario,
            figures: Vec::new(),
            violations: Vec::new(),
        }
    }

    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn add(&mut self, key: &'static str, value: impl Into<Value>) {
        self.figures.push((key, value.into()));
    }

    /// Records `violation` unless `holds`.
    pub fn expect(&mut self, holds: bool, violation: impl Into<String>) {
        if !holds {
            self.violations.push(violation.into());
        }
    }

    pub fn figure(&self, key: &str) -> Option<&Value> {
        self.figures.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn json(&self) -> Value {
        let mut out = json!({
            "bench": "faults",
            "scenario": self.scenario.name(),
            "passed": self.passed(),
            "violations": self.violations,
        });
        for (k, v) in &self.figures {
            out[*k] = v.clone();
        }
        out
    }

    /// The table, then the JSON line.
    pub fn print(&self) {
        println!(
            "faults: {} — {}",
            self.scenario.name(),
            if self.passed() { "PASS" } else { "FAIL" }
        );
        for (k, v) in &self.figures {
            let shown = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) if n.is_f64() => format!("{:.1}", n.as_f64().unwrap_or(0.0)),
                other => other.to_string(),
            };
            println!("  {k:<40}{shown:>16}");
        }
        for v in &self.violations {
            println!("  VIOLATION: {v}");
        }
        println!("{}", self.json());
    }
}

/// Milliseconds to one decimal, for figures.
pub fn millis(d: Duration) -> Value {
    json!((super::ms(d) * 10.0).round() / 10.0)
}

/// Runs the chosen scenarios one after another, printing each report as it completes.
pub async fn run(args: FaultsArgs) -> anyhow::Result<Vec<Report>> {
    let chosen = if args.scenario.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        args.scenario.clone()
    };
    let mut reports = Vec::new();
    for scenario in chosen {
        eprintln!("faults: {} …", scenario.name());
        let report = match scenario {
            Scenario::Neo4jOutage => scenarios::neo4j_outage(&args).await?,
            Scenario::Sigkill => scenarios::sigkill(&args).await?,
            Scenario::SpoolFull => scenarios::spool_full(&args).await?,
            Scenario::LlmFaults => llm::llm_faults(&args).await?,
            Scenario::SlowNeo4j => scenarios::slow_neo4j(&args).await?,
        };
        report.print();
        reports.push(report);
    }
    Ok(reports)
}
