//! `cairn-bench ui`: the web UI at `/ui` over the seeded project ([`crate::seeded`]: 10k
//! sessions / 1M operations by default, with decisions, beliefs with evidence, todos and
//! extraction runs). Signs in as a browser does (the read key posted to `/ui/signin`, the
//! cookie kept), then requests every kind of page in turn — project, sessions, a subject's
//! decisions, beliefs, a belief with its evidence, a file, extraction runs, search — and
//! `/healthz` and `/readyz` beside them as the baseline, round after round so that the
//! machine's slow moments fall on every page alike. Each answer must be a 200 page carrying
//! what it is about (the session's id, the subject, the path, …). Prints p50, p95 and max
//! per page, its size, and p95 as a multiple of `/readyz`'s; JSON on the last line.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use super::seeded::{self, SeedArgs};
use super::{ms, quantile};

#[derive(Args, Debug)]
pub struct UiBench {
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Timed requests per page (after `--warmup` rounds).
    #[arg(long, default_value_t = 300)]
    pub requests: usize,
    /// Untimed rounds first (every page once per round).
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
    /// Different sessions whose pages are requested in turn.
    #[arg(long, default_value_t = 8)]
    pub session_pages: usize,
}

/// One kind of page: its requests (taken in turn) and what each answer must contain.
struct PageKind {
    name: &'static str,
    /// Path and query, and the text the page must show.
    targets: Vec<(String, String)>,
    /// The baseline: plain text, not a page.
    baseline: bool,
}

/// One line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct PageRow {
    pub page: String,
    pub requests: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    /// Median body size.
    pub bytes: usize,
    /// The smallest body seen.
    pub min_bytes: usize,
    pub baseline: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct UiReport {
    pub project: String,
    pub sessions: usize,
    pub operations: usize,
    pub rows: Vec<PageRow>,
}

impl UiReport {
    /// The row of the page called `name`.
    pub fn row(&self, name: &str) -> Option<&PageRow> {
        self.rows.iter().find(|r| r.page == name)
    }
}

/// A form value, percent-encoded.
fn form_value(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Signs in through `POST /ui/signin` as a browser form; the cookie pair to send back.
async fn sign_in(http: &reqwest::Client, base: &str, key: &str) -> anyhow::Result<String> {
    let resp = http
        .post(format!("{base}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={}", form_value(key)))
        .send()
        .await
        .context("signing in")?;
    anyhow::ensure!(
        resp.status() == reqwest::StatusCode::SEE_OTHER,
        "sign-in answered {}",
        resp.status()
    );
    let set = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .context("sign-in set no cookie")?;
    Ok(set.split(';').next().unwrap_or_default().to_string())
}

fn pages(served: &seeded::Served, b: &UiBench) -> Vec<PageKind> {
    let s = &b.seed;
    let project = &served.project;
    let one = |path: &str, expect: &str| vec![(path.to_string(), expect.to_string())];
    let mut sessions = vec![served.big_session.clone()];
    let others = b.session_pages.saturating_sub(1).min(s.sessions - 1);
    sessions.extend(
        (0..others).map(|i| seeded::session_id(project, i * (s.sessions - 1) / others.max(1))),
    );
    let subjects = seeded::SUBJECTS.iter().take(4);
    let query = |q: &str| q.replace(' ', "+");
    vec![
        PageKind {
            name: "project",
            targets: one("/ui", &served.big_session),
            baseline: false,
        },
        PageKind {
            name: "session",
            targets: sessions
                .iter()
                .map(|id| (format!("/ui/sessions/{id}"), id.clone()))
                .collect(),
            baseline: false,
        },
        PageKind {
            name: "decisions of a subject",
            targets: subjects
                .map(|sub| {
                    (
                        format!("/ui/decisions?subject={}", query(sub)),
                        "(take 0)".to_string(),
                    )
                })
                .collect(),
            baseline: false,
        },
        PageKind {
            name: "beliefs",
            targets: one("/ui/beliefs", "/ui/beliefs/"),
            baseline: false,
        },
        PageKind {
            name: "belief with evidence",
            targets: (0..4)
                .map(|i| {
                    let id = seeded::belief_id(project, i * 7);
                    (format!("/ui/beliefs/{id}"), "/ui/sessions/".to_string())
                })
                .collect(),
            baseline: false,
        },
        PageKind {
            name: "file",
            targets: (0..4)
                .map(|j| {
                    // The decisions on subject `j` name this file.
                    let path = seeded::decided_file(j);
                    (
                        format!("/ui/file?path={}", form_value(&path)),
                        seeded::SUBJECTS[j].to_string(),
                    )
                })
                .collect(),
            baseline: false,
        },
        PageKind {
            name: "extraction runs",
            targets: one("/ui/runs", "completed"),
            baseline: false,
        },
        PageKind {
            name: "search",
            targets: super::recall::TURN_QUERIES
                .iter()
                .take(4)
                .map(|q| {
                    (
                        format!("/ui/search?q={}", query(q)),
                        "/ui/sessions/".to_string(),
                    )
                })
                .collect(),
            baseline: false,
        },
        PageKind {
            name: "/healthz",
            targets: one("/healthz", ""),
            baseline: true,
        },
        PageKind {
            name: "/readyz",
            targets: one("/readyz", ""),
            baseline: true,
        },
    ]
}

/// Seeds (or reuses) the project, serves it, signs in and measures every page.
pub async fn run(b: UiBench) -> anyhow::Result<Option<UiReport>> {
    anyhow::ensure!(b.requests >= 1, "--requests must be at least 1");
    let Some(served) = seeded::serve(&b.seed).await? else {
        return Ok(None);
    };
    let measured = measure(&served, &b).await;
    served.stop(b.seed.purge).await?;
    let rows = measured?;
    Ok(Some(UiReport {
        project: b.seed.project(),
        sessions: b.seed.sessions,
        operations: b.seed.operations,
        rows,
    }))
}

async fn measure(served: &seeded::Served, b: &UiBench) -> anyhow::Result<Vec<PageRow>> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()?;
    let cookie = sign_in(&http, &served.base, &served.key).await?;
    let kinds = pages(served, b);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(b.requests); kinds.len()];
    let mut sizes: Vec<Vec<usize>> = vec![Vec::with_capacity(b.requests); kinds.len()];
    for round in 0..b.warmup + b.requests {
        for (k, kind) in kinds.iter().enumerate() {
            let (path, expect) = &kind.targets[round % kind.targets.len()];
            let started = Instant::now();
            let resp = http
                .get(format!("{}{path}", served.base))
                .header("cookie", &cookie)
                .send()
                .await
                .with_context(|| format!("GET {path}"))?;
            let status = resp.status();
            let body = resp.text().await?;
            let took = started.elapsed();
            anyhow::ensure!(
                status == reqwest::StatusCode::OK,
                "GET {path} answered {status}: {}",
                body.chars().take(300).collect::<String>()
            );
            anyhow::ensure!(
                kind.baseline || (body.contains("</html>") && body.contains(expect.as_str())),
                "GET {path}: the page does not show {expect:?}"
            );
            if round >= b.warmup {
                times[k].push(took);
                sizes[k].push(body.len());
            }
        }
    }
    Ok(kinds
        .iter()
        .zip(times.iter_mut().zip(sizes.iter_mut()))
        .map(|(kind, (t, s))| {
            s.sort_unstable();
            PageRow {
                page: kind.name.to_string(),
                requests: t.len(),
                p50_ms: ms(quantile(t, 0.50)),
                p95_ms: ms(quantile(t, 0.95)),
                max_ms: ms(quantile(t, 1.0)),
                bytes: s[s.len() / 2],
                min_bytes: s[0],
                baseline: kind.baseline,
            }
        })
        .collect())
}

/// The table, and the report as JSON on the last line.
pub fn print(r: &UiReport) {
    println!(
        "project {}: {} sessions, {} operations; {} timed requests per page",
        r.project,
        r.sessions,
        r.operations,
        r.rows.first().map_or(0, |x| x.requests)
    );
    let ready_p95 = r.row("/readyz").map_or(0.0, |x| x.p95_ms);
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "page", "p50 ms", "p95 ms", "max ms", "bytes", "p95 ×readyz"
    );
    for x in &r.rows {
        println!(
            "{:<24} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>12.1}",
            x.page,
            x.p50_ms,
            x.p95_ms,
            x.max_ms,
            x.bytes,
            if ready_p95 > 0.0 {
                x.p95_ms / ready_p95
            } else {
                0.0
            }
        );
    }
    if let Ok(json) = serde_json::to_string(r) {
        println!("{json}");
    }
}
