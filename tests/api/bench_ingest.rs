//! `cairn-bench ingest` end to end at a small size: every operation reaches Neo4j, and the
//! server-side figures the report prints come from the server's own metrics, next to the
//! spool's disk timed alone.

use cairn_bench::ingest::{self, IngestArgs};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    ingest: IngestArgs,
}

#[tokio::test]
async fn a_small_ingest_lands_every_operation_and_reports_the_spool() {
    let uri = crate::helpers::neo4j_uri();
    let args = Args::parse_from([
        "test",
        "--operations",
        "1200",
        "--batch",
        "50",
        "--clients",
        "3",
        "--rounds",
        "1",
        "--neo4j-uri",
        uri.as_str(),
        "--spool-segment-bytes",
        "262144",
        "--disk-syncs",
        "30",
        // An embedding indexer would embed every other test's sessions with its model.
        "--embed",
        "off",
    ])
    .ingest;
    let r = ingest::run(args).await.expect("the bench runs");
    assert_eq!(r.operations, 1200);
    assert!(
        r.cairn_ops_per_sec > 0.0 && r.baseline_ops_per_sec > 0.0,
        "{r:?}"
    );
    assert!(
        r.cairn_ack_p50_ms > 0.0 && r.cairn_ack_p99_ms >= r.cairn_ack_p50_ms,
        "{r:?}"
    );
    // Other tests in this process share the metrics: at least this run's 24 requests.
    assert!(r.spool_syncs.unwrap_or(0.0) >= 1.0, "{r:?}");
    let slow = r.spool_syncs_over_5ms.expect("fsync buckets");
    assert!(slow >= 0.0 && slow <= r.spool_syncs.unwrap(), "{r:?}");
    assert!(r.server_acks_over_10ms.is_some(), "{r:?}");
    // The spool's disk timed alone: 30 syncs before the round, and while each side wrote as
    // many as fit (at least one).
    assert_eq!(r.disk_idle.syncs, 30, "{r:?}");
    assert!(r.disk_under_baseline.syncs >= 1, "{r:?}");
    assert!(r.disk_under_cairn.syncs >= 1, "{r:?}");
    for d in [&r.disk_idle, &r.disk_under_baseline, &r.disk_under_cairn] {
        assert!(
            d.p50_ms > 0.0
                && d.p99_ms >= d.p50_ms
                && d.max_ms >= d.p99_ms
                && d.over_10ms <= d.syncs,
            "{r:?}"
        );
    }
}
