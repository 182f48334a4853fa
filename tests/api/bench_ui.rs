//! `cairn-bench ui` end to end at a tiny size: it signs in through the sign-in form, every
//! kind of page answers 200 with what it is about (the bench insists on it), and the report
//! has a row per page next to the `/healthz` and `/readyz` baseline.

use cairn_bench::ui::{self, UiBench};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    ui: UiBench,
}

#[tokio::test]
async fn a_tiny_ui_bench_times_every_page_with_content() {
    crate::helpers::schema_once().await;
    let uri = crate::helpers::neo4j_uri();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let args = Args::parse_from([
        "test",
        "--sessions",
        "20",
        "--operations",
        "50",
        "--big-session-ops",
        "10",
        "--requests",
        "3",
        "--warmup",
        "1",
        "--project",
        project.as_str(),
        "--purge",
        // An embedding indexer would embed every other test's sessions.
        "--embed",
        "off",
        "--neo4j-uri",
        uri.as_str(),
    ])
    .ui;
    let r = ui::run(args)
        .await
        .expect("the bench runs")
        .expect("a report");
    let pages: Vec<&str> = r.rows.iter().map(|x| x.page.as_str()).collect();
    assert_eq!(
        pages,
        vec![
            "project",
            "session",
            "decisions of a subject",
            "beliefs",
            "belief with evidence",
            "file",
            "extraction runs",
            "search",
            "/healthz",
            "/readyz"
        ]
    );
    for x in &r.rows {
        assert_eq!(x.requests, 3, "{x:?}");
        assert!(
            x.p50_ms > 0.0 && x.p95_ms >= x.p50_ms && x.max_ms >= x.p95_ms,
            "{x:?}"
        );
        if !x.baseline {
            // A page with a frame and its content, not an empty state or a sign-in form.
            assert!(x.min_bytes > 3_000, "{x:?}");
        }
    }
    assert_eq!(r.rows.iter().filter(|x| x.baseline).count(), 2);
    // --purge removed the project's memory; its key, the sign-in made with it and the audit
    // trail are credentials and records, kept by a purge.
    assert_eq!(
        crate::helpers::count(
            "MATCH (n {project: $project}) WHERE NOT (n:ApiKey OR n:UiSession OR n:AuditEvent) \
             RETURN count(n) AS n",
            &project
        )
        .await,
        0
    );
    assert!(
        crate::helpers::count(
            "MATCH (n:ApiKey {project: $project}) RETURN count(n) AS n",
            &project
        )
        .await
            >= 1
    );
}
