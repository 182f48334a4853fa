//! `llm-faults`: an extraction run (`POST /v1/extraction/runs`) over closed sessions whose LLM
//! calls the stub fails, rate-limits or hangs, while capture load and the probes go on. The
//! run must finish, sessions behind transient faults must be extracted, the others must fail
//! leaving nothing of themselves (no pattern naming them, not claimed), and capture and
//! liveness must not notice.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::{json, Value};

use super::harness::Harness;
use super::{millis, FaultsArgs, Report, Scenario};
use cairn::graph::{param, statement};
use cairn_testkit::llm_stub::{Behaviour, LlmStub};

/// How long the run may take.
const RUN_LIMIT: Duration = Duration::from_secs(300);
/// HTTP retries cairn is configured with for this scenario.
const LLM_RETRIES: usize = 2;

#[derive(Deserialize)]
struct Outcome {
    session_id: String,
    extracted: bool,
    patterns: i64,
}

pub async fn llm_faults(args: &FaultsArgs) -> anyhow::Result<Report> {
    let timeout = Duration::from_secs(args.llm_timeout_secs.max(1));
    let stub = LlmStub::start(timeout + Duration::from_secs(1)).await?;
    let serve_args = [
        "--llm-base-url",
        stub.base_url(),
        "--llm-model",
        "stub",
        "--llm-timeout-secs",
        &timeout.as_secs().to_string(),
        "--llm-max-retries",
        &LLM_RETRIES.to_string(),
    ]
    .map(String::from)
    .to_vec();
    let mut h = Harness::start(args, Scenario::LlmFaults, false, serve_args).await?;
    eprintln!("  seeding {} closed sessions …", args.llm_sessions);
    let mut seeded = Vec::new();
    for i in 0..args.llm_sessions {
        let behaviour = Behaviour::ALL[i % Behaviour::ALL.len()];
        let sid = format!("{}-x{i}", h.project);
        let evidence = seed(&h, &sid, i).await?;
        stub.script(&sid, behaviour, &evidence);
        seeded.push((sid, behaviour));
    }

    let (probe, load) = (h.probe()?, h.load());
    h.hold(args.warmup_seconds, "before the run", &load, &probe)
        .await;
    let run_start = h.now();
    let (status, body) = h
        .post("/v1/extraction/runs", &json!({"project": h.project}))
        .await?;
    anyhow::ensure!(status == 202, "starting the run answered {status}: {body}");
    let run_id = body["run_id"].as_str().context("run id")?.to_string();
    eprintln!("  extraction run {run_id} started");
    let run = wait_for_run(&h, &run_id).await?;
    let run_end = h.now();
    eprintln!(
        "  run finished after {:.1}s: {}",
        (run_end - run_start).as_secs_f64(),
        run["status"]
    );
    let f = h.finish(load, probe).await?;

    let ids: Vec<String> = seeded.iter().map(|(s, _)| s.clone()).collect();
    let outcomes: Vec<Outcome> = h
        .store
        .fetch(
            statement(include_str!("../../cypher/bench_faults_extraction.cypher"))
                .param("project", h.project.as_str())
                .param("sessions", param(&ids)?),
        )
        .await?;
    let extracted = |sid: &str| outcomes.iter().any(|o| o.session_id == sid && o.extracted);
    let half_written = outcomes
        .iter()
        .filter(|o| !o.extracted && o.patterns > 0)
        .count();

    let mut r = Report::new(Scenario::LlmFaults);
    r.add("llm_timeout_s", timeout.as_secs());
    r.add("llm_max_retries", LLM_RETRIES);
    r.add("run_status", run["status"].clone());
    r.add("run_ms", millis(run_end - run_start));
    r.add("sessions", run["sessions"].clone());
    r.add("sessions_failed", run["sessions_failed"].clone());
    r.add("run_llm_calls", run["llm_calls"].clone());
    let served = stub.served();
    let requests: u64 = served.values().sum();
    r.add("llm_http_requests", requests);
    r.add(
        "llm_http_retries",
        requests.saturating_sub(seeded.len() as u64),
    );
    r.add("llm_stub_served", json!(served));
    let mut by_behaviour = serde_json::Map::new();
    for b in Behaviour::ALL {
        let of: Vec<&String> = seeded
            .iter()
            .filter(|(_, x)| *x == b)
            .map(|(s, _)| s)
            .collect();
        let ok = of.iter().filter(|s| extracted(s)).count();
        by_behaviour.insert(
            b.name().into(),
            json!(format!("{ok}/{} extracted", of.len())),
        );
        r.expect(
            of.iter().all(|s| extracted(s) == b.recovers()),
            format!(
                "sessions whose LLM {}: {ok}/{} extracted, expected {}",
                b.name(),
                of.len(),
                if b.recovers() { "all" } else { "none" }
            ),
        );
    }
    r.add("outcome_by_behaviour", Value::Object(by_behaviour));
    r.add("failed_sessions_half_written", half_written);

    let (_, cap50_before, cap99_before) = f.ledger.ack_latency(Duration::ZERO, run_start);
    let (during, cap50_during, cap99_during) = f.ledger.ack_latency(run_start, run_end);
    r.add("ack_p50_before_run_ms", millis(cap50_before));
    r.add("ack_p99_before_run_ms", millis(cap99_before));
    r.add("acked_requests_during_run", during);
    r.add("ack_p50_during_run_ms", millis(cap50_during));
    r.add("ack_p99_during_run_ms", millis(cap99_during));
    let (_, _, _, hz99_before) = f.samples.healthz_between(Duration::ZERO, run_start);
    let (_, hz_failed, _, hz99_during) = f.samples.healthz_between(run_start, run_end);
    r.add("healthz_p99_before_run_ms", millis(hz99_before));
    r.add("healthz_p99_during_run_ms", millis(hz99_during));
    r.add("healthz_not_200_during_run", hz_failed);
    h.report_common(&mut r, &f, &[]);

    r.expect(
        run["status"] == "completed" || run["status"] == "completed_with_errors",
        format!("the run ended {}", run["status"]),
    );
    let failed = outcomes.iter().filter(|o| !o.extracted).count() as i64;
    r.expect(
        run["sessions_failed"].as_i64() == Some(failed),
        format!(
            "the run reports {} failed sessions, Neo4j shows {failed} not extracted",
            run["sessions_failed"]
        ),
    );
    r.expect(
        half_written == 0,
        format!("{half_written} failed sessions have patterns written"),
    );
    r.expect(hz_failed == 0, "/healthz failed during the run");
    r.expect(during > 0, "nothing was acknowledged during the run");
    h.close(&r).await;
    Ok(r)
}

/// A closed session with a read, a write, a test run and a message on its own file; returns
/// the id of the write (what the stub cites as evidence).
async fn seed(h: &Harness, sid: &str, i: usize) -> anyhow::Result<String> {
    h.start_session(sid, &format!("change the parser of module {i}"))
        .await?;
    let file = format!("src/parser_{i}.rs");
    let id = |k: &str| format!("{sid}-{k}");
    let ops = json!([
        {"id": id("r"), "type": "read", "target": file, "summary": format!("read {file}"), "files_read": [file]},
        {"id": id("w"), "type": "write", "target": file, "summary": "handled the empty input", "files_modified": [file]},
        {"id": id("t"), "type": "tool_call", "tool": "Bash", "target": "cargo test", "summary": "ran the tests", "triggered_by": id("w")},
        {"id": id("m"), "type": "message", "role": "assistant", "content": "the parser accepts empty input now", "summary": "reported"}
    ]);
    let (status, body) = h
        .post(
            &format!("/v1/sessions/{sid}/operations?sync=true"),
            &json!({"operations": ops}),
        )
        .await?;
    anyhow::ensure!(
        status == 201,
        "seeding operations answered {status}: {body}"
    );
    let (status, body) = h
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": format!("empty input handled in {file}")}),
        )
        .await?;
    anyhow::ensure!(status == 201, "closing a session answered {status}: {body}");
    Ok(id("w"))
}

async fn wait_for_run(h: &Harness, run_id: &str) -> anyhow::Result<Value> {
    let started = Instant::now();
    loop {
        let (status, run) = h.get(&format!("/v1/extraction/runs/{run_id}")).await?;
        anyhow::ensure!(status == 200, "reading the run answered {status}: {run}");
        if run["status"] != "running" {
            return Ok(run);
        }
        anyhow::ensure!(
            started.elapsed() < RUN_LIMIT,
            "the run did not finish within {RUN_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
