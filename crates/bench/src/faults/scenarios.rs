//! The capture-path faults: Neo4j unreachable, the server SIGKILLed, the spool full, Neo4j
//! slow. Each is warm-up → fault → fault lifted → a little more load → drain → check.

use std::time::Duration;

use serde_json::Value;

use super::clients::Load;
use super::harness::{Finished, Harness};
use super::probe::Probe;
use super::{millis, FaultsArgs, Report, Scenario};

/// `/readyz` answers within 2 s even when Neo4j hangs; the probe asks every 200 ms.
const READY_FLIP_BOUND: Duration = Duration::from_millis(3_000);

/// When a fault was on, and how long the backlog took to reach Neo4j once it was lifted.
struct Window {
    start: Duration,
    end: Duration,
    /// Operations acknowledged when the fault was lifted.
    backlog_ops: u64,
    backlog_written: Option<Duration>,
}

/// Most load added past `after_seconds` while waiting for a first acknowledgement after a fault.
const AFTER_GRACE: Duration = Duration::from_secs(15);

/// Warm-up, `begin` the fault, hold it `secs`, `end` it, then more load while the backlog
/// drains, and until something new is acknowledged.
async fn fault_window(
    h: &Harness,
    args: &FaultsArgs,
    (load, probe): (&Load, &Probe),
    (phase, secs): (&str, u64),
    begin: impl FnOnce(),
    end: impl FnOnce(),
) -> Window {
    h.hold(args.warmup_seconds, "warm-up", load, probe).await;
    begin();
    let start = h.now();
    eprintln!("  {phase} at t={:.1}s", start.as_secs_f64());
    h.hold(secs, phase, load, probe).await;
    end();
    let end_at = h.now();
    let backlog_ops = load.acked_ops();
    eprintln!(
        "  fault lifted at t={:.1}s with {backlog_ops} operations acknowledged",
        end_at.as_secs_f64()
    );
    let (backlog_written, ()) = tokio::join!(
        h.written(backlog_ops),
        h.hold(args.after_seconds, "after", load, probe)
    );
    // New writes are acknowledged once the spool has room again, which on a busy machine may
    // come late in a short window: the load goes on, a second at a time, until one is (or
    // `AFTER_GRACE` has passed, and the report says nothing was).
    let grace = h.now();
    while load.acked_ops() <= backlog_ops && h.now() - grace < AFTER_GRACE {
        h.hold(1, "after (until acknowledged)", load, probe).await;
    }
    Window {
        start,
        end: end_at,
        backlog_ops,
        backlog_written,
    }
}

fn opt_millis(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, millis)
}

/// Figures of a fault window: acks before and during it, readiness flipping, liveness, the
/// spool, the backlog.
fn report_window(r: &mut Report, f: &Finished, w: &Window) {
    let (_, p50_before, p99_before) = f.ledger.ack_latency(Duration::ZERO, w.start);
    let (during, p50_during, p99_during) = f.ledger.ack_latency(w.start, w.end);
    let (after, _, _) = f.ledger.ack_latency(w.end, f.stopped_at);
    r.add("fault_s", (w.end - w.start).as_secs());
    r.add("ack_p50_before_fault_ms", millis(p50_before));
    r.add("ack_p99_before_fault_ms", millis(p99_before));
    r.add("acked_requests_during_fault", during);
    r.add("ack_p50_during_fault_ms", millis(p50_during));
    r.add("ack_p99_during_fault_ms", millis(p99_during));
    r.add("acked_requests_after_fault", after);
    let to_503 = f.samples.readyz_became(503, w.start);
    let back_to_200 = f.samples.readyz_became(200, w.end);
    r.add("readyz_503_after_fault_ms", opt_millis(to_503));
    r.add("readyz_200_after_lift_ms", opt_millis(back_to_200));
    let (n, failed, p50, p99) = f.samples.healthz_between(w.start, w.end);
    r.add("healthz_during_fault", n);
    r.add("healthz_p50_during_fault_ms", millis(p50));
    r.add("healthz_p99_during_fault_ms", millis(p99));
    let (_, failed_overall, _, _) = f.samples.healthz_between(Duration::ZERO, f.stopped_at);
    r.add("healthz_not_200", failed_overall);
    r.add("spool_peak_bytes", f.samples.spool_peak());
    r.add("backlog_ops_at_lift", w.backlog_ops);
    r.add(
        "backlog_written_after_lift_ms",
        opt_millis(w.backlog_written),
    );
    r.expect(
        to_503.is_some_and(|d| d <= READY_FLIP_BOUND),
        format!("/readyz did not answer 503 within {READY_FLIP_BOUND:?} of the fault (after {to_503:?})"),
    );
    r.expect(
        back_to_200.is_some(),
        "/readyz did not answer 200 again after the fault",
    );
    r.expect(
        failed == 0 && failed_overall == 0,
        format!("/healthz did not answer 200 {failed_overall} times"),
    );
    r.expect(
        w.backlog_written.is_some(),
        "the backlog was not written after the fault",
    );
    r.expect(after > 0, "nothing was acknowledged after the fault");
}

/// What the proxy does to Neo4j during the fault window.
#[derive(Clone, Copy)]
enum ProxyFault {
    Cut,
    Delay(Duration),
}

/// A scenario around one proxy fault: `serve_args` for the child, the fault held `secs`,
/// `extra` for the scenario's own figures and expectations (before the shared ones), and the
/// capture answers the fault may cause besides 202.
async fn proxy_scenario(
    args: &FaultsArgs,
    scenario: Scenario,
    serve_args: Vec<String>,
    (phase, secs, fault): (&str, u64, ProxyFault),
    allowed: &[&str],
    extra: impl FnOnce(&mut Report, &Finished, &Window),
) -> anyhow::Result<Report> {
    let mut h = Harness::start(args, scenario, true, serve_args).await?;
    let (probe, load) = (h.probe()?, h.load());
    let proxy = h.proxy();
    let w = fault_window(
        &h,
        args,
        (&load, &probe),
        (phase, secs),
        || match fault {
            ProxyFault::Cut => proxy.cut(),
            ProxyFault::Delay(d) => proxy.set_delay(d),
        },
        || {
            proxy.restore();
            proxy.set_delay(Duration::ZERO);
        },
    )
    .await;
    let f = h.finish(load, probe).await?;
    let mut r = Report::new(scenario);
    extra(&mut r, &f, &w);
    report_window(&mut r, &f, &w);
    h.report_common(&mut r, &f, allowed);
    h.close(&r).await;
    Ok(r)
}

/// Neo4j unreachable for `--outage-seconds`: capture keeps acknowledging into the spool,
/// readiness says 503 and recovers, liveness never fails, and the backlog drains.
pub async fn neo4j_outage(args: &FaultsArgs) -> anyhow::Result<Report> {
    let fault = ("neo4j cut", args.outage_seconds, ProxyFault::Cut);
    proxy_scenario(
        args,
        Scenario::Neo4jOutage,
        Vec::new(),
        fault,
        &[],
        |r, f, w| {
            let during = f.ledger.ack_latency(w.start, w.end).0;
            r.expect(during > 0, "nothing was acknowledged during the outage");
        },
    )
    .await
}

/// Neo4j unreachable with a small spool quota: once it is full capture answers 503
/// `spool_full` and stores none of it; once Neo4j is back everything acknowledged is written.
pub async fn spool_full(args: &FaultsArgs) -> anyhow::Result<Report> {
    let quota = vec![
        "--spool-max-bytes".to_string(),
        args.spool_max_bytes.to_string(),
    ];
    let fault = (
        "neo4j cut, spool filling",
        args.outage_seconds,
        ProxyFault::Cut,
    );
    let allowed = ["503 spool_full"];
    proxy_scenario(
        args,
        Scenario::SpoolFull,
        quota,
        fault,
        &allowed,
        |r, f, _| {
            r.add("spool_quota_bytes", args.spool_max_bytes);
            let refusals = f.ledger.answers.get(allowed[0]).copied().unwrap_or(0);
            r.add("spool_full_answers", refusals);
            r.expect(
                refusals > 0,
                "the spool never filled: lower --spool-max-bytes or lengthen --outage-seconds",
            );
        },
    )
    .await
}

/// Every chunk Neo4j sends held for `--delay-ms`: readiness flips to 503 within its bound,
/// liveness and capture stay fast (they do not wait on Neo4j), and once the delay is gone
/// the backlog drains.
pub async fn slow_neo4j(args: &FaultsArgs) -> anyhow::Result<Report> {
    let delay = Duration::from_millis(args.delay_ms);
    let fault = ("neo4j slow", args.slow_seconds, ProxyFault::Delay(delay));
    proxy_scenario(
        args,
        Scenario::SlowNeo4j,
        Vec::new(),
        fault,
        &[],
        |r, _, _| {
            r.add("neo4j_delay_ms", args.delay_ms);
        },
    )
    .await
}

/// The server SIGKILLed `--kills` times under load and restarted on the same spool; clients
/// re-send what got no answer with the same operation ids.
pub async fn sigkill(args: &FaultsArgs) -> anyhow::Result<Report> {
    let mut h = Harness::start(args, Scenario::Sigkill, false, Vec::new()).await?;
    let (probe, load) = (h.probe()?, h.load());
    let mut restarts = Vec::new();
    let mut last_kill = Duration::ZERO;
    for k in 1..=args.kills {
        h.hold(args.warmup_seconds, "load", &load, &probe).await;
        h.child.kill().await?;
        last_kill = h.now();
        eprintln!(
            "  SIGKILL {k}/{} at t={:.1}s with {} operations acknowledged",
            args.kills,
            last_kill.as_secs_f64(),
            load.acked_ops()
        );
        h.child.restart()?;
        restarts.push(h.child.wait_ready(&h.http, Duration::from_secs(60)).await?);
    }
    h.hold(args.after_seconds, "after", &load, &probe).await;
    let f = h.finish(load, probe).await?;
    let mut r = Report::new(Scenario::Sigkill);
    r.add("kills", args.kills);
    r.add(
        "restart_to_ready_max_ms",
        millis(restarts.iter().copied().max().unwrap_or_default()),
    );
    r.add(
        "unanswered_requests",
        f.ledger.answers.get("no answer").copied().unwrap_or(0),
    );
    let after = f.ledger.ack_latency(last_kill, f.stopped_at).0;
    r.add("acked_requests_after_last_restart", after);
    h.report_common(&mut r, &f, &["no answer"]);
    r.expect(after > 0, "nothing was acknowledged after the last restart");
    h.close(&r).await;
    Ok(r)
}
