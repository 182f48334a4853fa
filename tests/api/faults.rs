//! `cairn-bench faults` against the real Neo4j and a real `cairn serve`: the cheapest
//! scenario, a tiny spool quota filled while Neo4j is cut, end to end.

use cairn_bench::faults::{self, FaultsArgs};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    faults: FaultsArgs,
}

#[tokio::test]
async fn spool_full_refuses_stores_nothing_refused_and_loses_nothing_acknowledged() {
    let args = Args::parse_from([
        "test",
        "--scenario",
        "spool-full",
        "--clients",
        "4",
        "--rate",
        "5",
        "--warmup-seconds",
        "1",
        "--outage-seconds",
        "3",
        "--after-seconds",
        "2",
        "--spool-max-bytes",
        "16384",
        "--child-log",
        "error",
        "--cairn-bin",
        env!("CARGO_BIN_EXE_cairn"),
    ])
    .faults;
    let reports = faults::run(args).await.expect("the scenario runs");
    let r = &reports[0];
    assert!(r.passed(), "{:?}\n{}", r.violations, r.json());
    let figure = |k: &str| r.figure(k).and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(figure("spool_full_answers") > 0, "{}", r.json());
    assert!(figure("acked_requests_after_fault") > 0, "{}", r.json());
    assert_eq!(figure("missing_ops"), 0);
    assert_eq!(figure("refused_ops_stored"), 0);
}
