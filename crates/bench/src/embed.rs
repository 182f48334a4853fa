//! `cairn-bench embed`: the embedded model's throughput on this machine, through the same
//! [`Embedder`] the server uses (its own thread, length-sorted batches). Short texts (~20
//! tokens, a typical operation) and long ones (~200 tokens) in requests of `--batch` texts:
//! texts/s and p50/p95 request latency. A mixed stream (4 short : 1 long, shuffled) is
//! embedded twice: in arrival order, each batch padded to its longest text (the baseline, a
//! plain batching), and as one request the model sorts by length. Then how long a search's
//! query waits while the long texts are embedded as one request, as the turn index's pass
//! does, against the same queries with nothing else to embed (the baseline of the same run).
//! Then the peak RSS of this
//! process, and the idle RSS of `cairn serve` children with the model loaded and with
//! `CAIRN_EMBED=off` (`--no-serve` skips it). Needs no Neo4j.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

use super::{ms, quantile};
use cairn::config::{EmbedLocalModel, EmbedSettings, Neo4jSettings};
use cairn::embed::{local, Embedder, Purpose, Status};

#[derive(Args, Debug)]
pub struct EmbedBench {
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
    /// The embedded model.
    #[arg(
        long,
        env = "CAIRN_EMBED_LOCAL_MODEL",
        value_enum,
        default_value = "all-MiniLM-L6-v2"
    )]
    pub local_model: EmbedLocalModel,
    /// Directory of the model files (default: `.cairn/models/<model>`).
    #[arg(long, env = "CAIRN_EMBED_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// Short texts embedded (long ones: a quarter of this).
    #[arg(long, default_value_t = 1_024)]
    pub texts: usize,
    /// Texts per request (and per forward pass at most).
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Skip the `cairn serve` idle-RSS measurement.
    #[arg(long)]
    pub no_serve: bool,
}

/// Queries asked while a pass runs, and alone.
const QUERIES: usize = 40;

/// Words of coding-agent operations.
const WORDS: &[&str] = &[
    "parser",
    "test",
    "fails",
    "flaky",
    "tokenizer",
    "ran",
    "cargo",
    "build",
    "fixed",
    "the",
    "config",
    "loader",
    "reads",
    "environment",
    "variables",
    "retry",
    "backoff",
    "writer",
    "spool",
    "neo4j",
    "session",
    "decision",
    "rationale",
    "because",
    "latency",
    "p95",
    "query",
    "index",
    "fulltext",
    "vector",
    "embedding",
    "refactor",
    "module",
    "rename",
    "function",
    "error",
    "handling",
    "timeout",
    "deadline",
    "database",
    "migration",
    "schema",
    "version",
    "token",
    "expiry",
    "refresh",
    "login",
    "cookie",
    "cache",
    "eviction",
    "memory",
    "budget",
    "context",
    "summary",
    "user",
    "asked",
    "assistant",
    "replied",
    "wrote",
    "src/main.rs",
    "Cargo.toml",
    "README",
    "benchmark",
    "throughput",
    "regression",
    "commit",
    "branch",
    "merge",
    "review",
    "lint",
    "clippy",
    "format",
    "warning",
    "deprecated",
    "upgrade",
    "dependency",
    "serde",
    "json",
    "field",
    "missing",
    "optional",
    "default",
    "value",
    "backup",
    "restore",
    "snapshot",
    "faster",
    "slower",
    "nightly",
    "job",
    "queue",
    "worker",
    "thread",
    "async",
];

fn text(rng: &mut StdRng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// What embedding a stream of texts took.
struct Run {
    /// Texts per second of wall-clock time.
    rate: f64,
    /// Texts per second of this process's CPU time (all threads): what the machine's cores
    /// could do each, whatever else runs on them.
    per_cpu_s: f64,
    latencies: Vec<Duration>,
}

/// Requests of `batch` texts one after another.
async fn stream(embedder: &Embedder, texts: &[String], batch: usize) -> anyhow::Result<Run> {
    let started = Instant::now();
    let cpu = cpu_seconds();
    let mut latencies = Vec::new();
    for chunk in texts.chunks(batch) {
        let t = Instant::now();
        let v = embedder.embed(chunk).await?;
        anyhow::ensure!(v.len() == chunk.len(), "wrong number of vectors");
        latencies.push(t.elapsed());
    }
    let n = texts.len() as f64;
    Ok(Run {
        rate: n / started.elapsed().as_secs_f64(),
        per_cpu_s: n / (cpu_seconds() - cpu).max(1e-9),
        latencies,
    })
}

/// Queries a search would embed, each alone, one after another while `going` says so.
async fn queries(
    embedder: &Embedder,
    queries: &[String],
    going: impl Fn() -> bool,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(queries.len());
    for q in queries {
        if !going() {
            break;
        }
        let t = Instant::now();
        embedder
            .embed_for(std::slice::from_ref(q), Purpose::Query)
            .await?;
        latencies.push(t.elapsed());
        tokio::time::sleep(QUERY_GAP).await;
    }
    Ok(latencies)
}

/// Time between two queries: a query arrives at some point of a pass, not always right
/// after one.
const QUERY_GAP: Duration = Duration::from_millis(37);

/// The latency of each of `asked` sent while `pass` is embedded as one request (the turn
/// index's pass); the queries stop when the pass is done.
async fn behind(
    embedder: &Embedder,
    pass: &[String],
    asked: &[String],
) -> anyhow::Result<Vec<Duration>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let running = AtomicBool::new(true);
    let (done, waited) = tokio::join!(
        async {
            let r = embedder.embed(pass).await;
            running.store(false, Ordering::SeqCst);
            r
        },
        async {
            // The pass is queued first.
            tokio::time::sleep(QUERY_GAP).await;
            queries(embedder, asked, || running.load(Ordering::SeqCst)).await
        }
    );
    done?;
    waited
}

/// User and system CPU time of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given and reads nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn peak_rss_mb() -> Option<f64> {
    cairn_testkit::child::proc_status_kb("/proc/self/status", "VmHWM:").map(|kb| kb as f64 / 1024.0)
}

/// Mean token count of `texts` under the model's tokenizer ([CLS] and [SEP] included).
fn mean_tokens(
    spec: &local::model::Spec,
    dir: &std::path::Path,
    texts: &[String],
) -> anyhow::Result<f64> {
    let tokenizer = local::model::tokenizer_from(&dir.join(spec.tokenizer.0), spec.max_tokens)?;
    let mut total = 0usize;
    for t in texts {
        let e = tokenizer
            .encode_fast(t.as_str(), true)
            .map_err(|e| anyhow::anyhow!("tokenizer: {e}"))?;
        total += e.len();
    }
    Ok(total as f64 / texts.len().max(1) as f64)
}

pub async fn run(b: EmbedBench) -> anyhow::Result<()> {
    let settings = EmbedSettings {
        local_model: b.local_model,
        model_dir: b.model_dir.clone(),
        batch: b.batch,
        ..Default::default()
    };
    let dir = local::model_dir(&settings);
    let started = Instant::now();
    let embedder = Embedder::from_settings(&settings, 384).context("embedder")?;
    let load = loop {
        match embedder.status() {
            Status::Ready => break started.elapsed(),
            Status::Unavailable(why) => anyhow::bail!("{why}"),
            Status::Loading if started.elapsed() > Duration::from_secs(300) => {
                anyhow::bail!("the model did not load within 300 s")
            }
            Status::Loading => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let mut rng = StdRng::seed_from_u64(b.seed);
    let short: Vec<String> = (0..b.texts)
        .map(|_| {
            let n = rng.random_range(12..20);
            text(&mut rng, n)
        })
        .collect();
    let long: Vec<String> = (0..(b.texts / 4).max(1))
        .map(|_| {
            let n = rng.random_range(130..170);
            text(&mut rng, n)
        })
        .collect();
    let mut mixed: Vec<String> = short.iter().take(b.texts * 4 / 5).cloned().collect();
    mixed.extend(long.iter().take(b.texts / 5).cloned());
    mixed.shuffle(&mut rng);

    // Warm up (first-touch allocations, CPU feature dispatch).
    embedder.embed(&short[..b.batch.min(short.len())]).await?;

    let Run {
        rate: short_rate,
        per_cpu_s: short_cpu,
        latencies: mut short_lat,
    } = stream(&embedder, &short, b.batch).await?;
    let Run {
        rate: long_rate,
        per_cpu_s: long_cpu,
        latencies: mut long_lat,
    } = stream(&embedder, &long, b.batch).await?;
    let plain = stream(&embedder, &mixed, b.batch).await?;
    let sorted = stream(&embedder, &mixed, mixed.len()).await?;
    let (mixed_plain, mixed_sorted) = (plain.rate, sorted.rate);
    let asked: Vec<String> = (0..QUERIES)
        .map(|_| {
            let n = rng.random_range(6..14);
            text(&mut rng, n)
        })
        .collect();
    let mut alone = queries(&embedder, &asked, || true).await?;
    let mut waited = behind(&embedder, &long, &asked).await?;
    anyhow::ensure!(
        !waited.is_empty(),
        "the long texts were embedded before a query was sent: rerun with more --texts"
    );
    let peak = peak_rss_mb();
    let spec = local::spec(b.local_model);
    let short_tokens = mean_tokens(spec, &dir, &short)?;
    let long_tokens = mean_tokens(spec, &dir, &long)?;
    let model = embedder.model().to_string();
    drop(embedder);

    let serve = if b.no_serve {
        None
    } else {
        Some(serve_rss(&b, &dir).await?)
    };

    println!(
        "embedded model {} ({}), {} threads, loaded in {:.0} ms",
        model,
        dir.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        ms(load)
    );
    println!(
        "short (~{short_tokens:.0} tokens): {short_rate:.0} texts/s ({short_cpu:.0} per CPU-second); batch of {} p50 {:.1} ms, p95 {:.1} ms",
        b.batch,
        ms(quantile(&mut short_lat, 0.5)),
        ms(quantile(&mut short_lat, 0.95))
    );
    println!(
        "long (~{long_tokens:.0} tokens): {long_rate:.0} texts/s ({long_cpu:.0} per CPU-second); batch of {} p50 {:.1} ms, p95 {:.1} ms",
        b.batch,
        ms(quantile(&mut long_lat, 0.5)),
        ms(quantile(&mut long_lat, 0.95))
    );
    println!(
        "mixed 4:1: {mixed_sorted:.0} texts/s ({:.0} per CPU-second) sorted by length vs {mixed_plain:.0} texts/s ({:.0} per CPU-second) in arrival order (baseline), x{:.2}",
        sorted.per_cpu_s,
        plain.per_cpu_s,
        mixed_sorted / mixed_plain.max(1e-9)
    );
    let (alone_p50, alone_p95) = (
        ms(quantile(&mut alone, 0.5)),
        ms(quantile(&mut alone, 0.95)),
    );
    let (waited_p50, waited_p95) = (
        ms(quantile(&mut waited, 0.5)),
        ms(quantile(&mut waited, 0.95)),
    );
    println!(
        "a query while {} long texts are embedded as one request ({} queries): p50 {waited_p50:.1} ms, p95 {waited_p95:.1} ms vs {alone_p50:.1} / {alone_p95:.1} ms with nothing else to embed (baseline), p95 x{:.1}",
        long.len(),
        waited.len(),
        waited_p95 / alone_p95.max(1e-9),
    );
    let load_avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average during the run: {}", load_avg.trim());
    println!("peak RSS of this process: {:.0} MB", peak.unwrap_or(0.0));
    if let Some((on, off)) = serve {
        println!(
            "cairn serve idle RSS: {on:.0} MB with the model loaded, {off:.0} MB with CAIRN_EMBED=off (baseline)"
        );
    }
    let report = serde_json::json!({
        "bench": "embed",
        "model": model,
        "batch": b.batch,
        "load_ms": ms(load),
        "load_average": load_avg.split_whitespace().next(),
        "short": {"texts": short.len(), "mean_tokens": short_tokens, "texts_per_s": short_rate, "texts_per_cpu_s": short_cpu,
                  "p50_ms": ms(quantile(&mut short_lat, 0.5)), "p95_ms": ms(quantile(&mut short_lat, 0.95))},
        "long": {"texts": long.len(), "mean_tokens": long_tokens, "texts_per_s": long_rate, "texts_per_cpu_s": long_cpu,
                 "p50_ms": ms(quantile(&mut long_lat, 0.5)), "p95_ms": ms(quantile(&mut long_lat, 0.95))},
        "mixed": {"texts": mixed.len(), "sorted_texts_per_s": mixed_sorted, "arrival_order_texts_per_s": mixed_plain,
                  "sorted_texts_per_cpu_s": sorted.per_cpu_s, "arrival_order_texts_per_cpu_s": plain.per_cpu_s},
        "query_behind_pass": {"queries": waited.len(), "pass_texts": long.len(), "p50_ms": waited_p50, "p95_ms": waited_p95,
                              "alone_p50_ms": alone_p50, "alone_p95_ms": alone_p95},
        "peak_rss_mb": peak,
        "serve_idle_rss_mb": serve.map(|(on, _)| on),
        "serve_idle_rss_mb_embed_off": serve.map(|(_, off)| off),
    });
    println!("{report}");
    Ok(())
}

/// Idle RSS (MB) of a `cairn serve` child with the model loaded, and of one without vectors.
/// Idle means nothing to embed: the children are pointed at a closed port instead of Neo4j
/// (a real database's pending sessions would keep the indexer busy), and read once the
/// model has loaded and start-up has settled.
async fn serve_rss(b: &EmbedBench, dir: &std::path::Path) -> anyhow::Result<(f64, f64)> {
    use cairn_testkit::child::{ServeChild, ServeOptions};
    let http = reqwest::Client::new();
    let dir = std::fs::canonicalize(dir).context("model directory")?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut neo4j = b.neo4j.clone();
    neo4j.uri = format!("bolt://127.0.0.1:{closed}");
    let mut out = Vec::new();
    for on in [true, false] {
        let spool =
            std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
        let mut options = ServeOptions::new(&b.cairn.path()?, &spool, &neo4j)?;
        options.args = vec![
            "--embed".into(),
            if on { "on" } else { "off" }.into(),
            "--embed-local-model".into(),
            local::spec(b.local_model).name.into(),
            "--embed-model-dir".into(),
            dir.display().to_string(),
        ];
        let child = ServeChild::spawn(options)?;
        let started = Instant::now();
        loop {
            // Not ready without Neo4j (503), but the body says how the model is.
            let r: serde_json::Value = match http.get(child.url("/readyz")).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            let status = r["embeddings"]["status"].as_str().unwrap_or("loading");
            if status != "loading" {
                anyhow::ensure!(
                    status == if on { "ready" } else { "off" },
                    "the child's embeddings are {status}: {}",
                    r["embeddings"]
                );
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(120),
                "the model did not load"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Idle: let start-up work (schema check, first index pass) settle.
        tokio::time::sleep(Duration::from_secs(3)).await;
        out.push(child.rss_mb().unwrap_or(0.0));
        child.stop().await;
    }
    Ok((out[0], out[1]))
}
