//! The running service: [`Application::build`] binds the port and wires the store, the capture
//! path, the embeddings client and the routes; [`Application::run_until_stopped`] serves until SIGINT/SIGTERM (or
//! [`Application::stopper`]), then lets the writer drain the spool before returning. Background
//! tasks: the schema check, the idle-session sweep (under a lease, one replica at a time), the
//! search index and, when `CAIRN_EXTRACT_SCHEDULE` is set, the scheduled extraction.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use poem::listener::{Acceptor, Listener, TcpListener};
use tokio::sync::watch;
use tracing::Instrument;

use crate::auth::Authenticator;
use crate::capture::{writer::Writer, Capture};
use crate::config::Settings;
use crate::graph::{self, Store};
use crate::state::AppState;

pub struct Application {
    port: u16,
    acceptor: poem::listener::TcpAcceptor,
    state: Arc<AppState>,
    writer: Writer,
    stop_tx: watch::Sender<bool>,
    schedule: Option<crate::extract::schedule::Schedule>,
}

impl Application {
    /// Connects (lazily) to Neo4j, opens the spool and binds the listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        if settings.insecure_no_auth && !settings.bind.ip().is_loopback() {
            anyhow::bail!(
                "--insecure-no-auth is refused on {}: it would expose every project; bind to 127.0.0.1 or use API keys",
                settings.bind
            );
        }
        // The configured connections are shared out: the capture writer's own pool gets one per
        // lane plus one for purges outside its transactions (at most half), requests the rest.
        // More connections in all would only make Neo4j juggle more transactions at once.
        let total = settings.neo4j.max_connections.max(2);
        let mut writer_neo4j = settings.neo4j.clone();
        writer_neo4j.max_connections = (usize::from(settings.writer_lanes) + 1).min(total / 2);
        let mut request_neo4j = settings.neo4j.clone();
        request_neo4j.max_connections = total - writer_neo4j.max_connections;
        let store = Store::connect(&request_neo4j).context("invalid Neo4j settings")?;
        let writer_store = Store::connect(&writer_neo4j).context("invalid Neo4j settings")?;
        let auth = Arc::new(Authenticator::new(
            store.clone(),
            settings.insecure_no_auth,
            settings.rate_limit_per_sec,
            settings.rate_limit_burst,
            Duration::from_secs(settings.key_recheck_secs),
        ));
        let (capture, writer) = Capture::open(
            store.clone(),
            writer_store,
            settings.spool_dir.clone(),
            settings.spool_max_bytes,
            settings.spool_segment_bytes,
            settings.tokenizer,
            settings.sync_wait(),
            usize::from(settings.writer_lanes),
        )
        .with_context(|| {
            format!(
                "could not open the spool in {}",
                settings.spool_dir.display()
            )
        })?;
        let schedule = settings
            .schedule
            .schedule
            .as_deref()
            .map(|expr| {
                crate::extract::schedule::Schedule::parse(expr, &settings.schedule.tz)
                    .map_err(anyhow::Error::msg)
            })
            .transpose()?;
        if let Some(p) = &settings.schedule.project {
            crate::domain::validate::project("CAIRN_EXTRACT_SCHEDULE_PROJECT", p)
                .map_err(|e| anyhow::anyhow!("CAIRN_EXTRACT_SCHEDULE_PROJECT: {e}"))?;
        }
        let acceptor = TcpListener::bind(settings.bind)
            .into_acceptor()
            .await
            .with_context(|| format!("could not listen on {}", settings.bind))?;
        let port = acceptor
            .local_addr()
            .first()
            .and_then(|a| a.as_socket_addr().map(|s| s.port()))
            .context("the listener has no socket address")?;
        let embedder =
            crate::embed::Embedder::from_settings(&settings.embed, settings.neo4j.embed_dimensions)
                .map(Arc::new);
        crate::telemetry::metrics_handle();
        let recall_cache_bytes = settings.recall_cache_mb.saturating_mul(1024 * 1024);
        crate::recall::held_vectors::configure(settings.held_vectors_mb.saturating_mul(1 << 20));
        let (stop_tx, _) = watch::channel(false);
        Ok(Self {
            port,
            acceptor,
            state: Arc::new(AppState {
                signin_throttle: crate::ui::throttle::SignInThrottle::new(
                    settings.ui_signin_failures,
                    Duration::from_secs(settings.ui_signin_window_secs),
                ),
                settings,
                store,
                capture,
                auth,
                embedder,
                logs: crate::recall::logs::Logs::new(recall_cache_bytes),
            }),
            writer,
            stop_tx,
            schedule,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn state(&self) -> Arc<AppState> {
        self.state.clone()
    }

    /// Sending `true` stops the application as SIGTERM would.
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop_tx.clone()
    }

    /// Serves until stopped, then drains the capture spool into Neo4j.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let Self {
            port,
            acceptor,
            state,
            writer,
            stop_tx,
            schedule,
        } = self;
        let settings = &state.settings;
        tracing::info!(port, neo4j.uri = %settings.neo4j.uri, spool.dir = %settings.spool_dir.display(), "cairn serving");
        match &state.embedder {
            Some(e) => tracing::info!(
                model = e.model(),
                dimensions = e.dimensions(),
                status = e.status().as_str(),
                "search vectors"
            ),
            None => tracing::info!("search vectors off (CAIRN_EMBED=off): keyword-only"),
        }
        if settings.insecure_no_auth {
            tracing::warn!("serving WITHOUT API keys (--insecure-no-auth): any local process can read and write every project");
        } else {
            tracing::info!("every /v1 request needs `Authorization: Bearer <key>`; create one with `cairn keys create --project <p> --scope admin`");
        }

        // One stop signal for the server and every background task.
        let signal_tx = stop_tx.clone();
        let signals = tokio::spawn(async move {
            let mut rx = signal_tx.subscribe();
            tokio::select! {
                _ = shutdown_signal() => { tracing::info!("shutdown signal received"); }
                _ = rx.wait_for(|v| *v) => {}
            }
            signal_tx.send_replace(true);
        });

        let writer_done = writer
            .spawn(stop_tx.subscribe())
            .context("could not start the capture writer's thread")?;
        let schema_task = tokio::spawn(
            ensure_schema(state.clone(), stop_tx.subscribe())
                .instrument(tracing::info_span!("job", job.name = "schema")),
        );
        let sweep_task = tokio::spawn(abandon_sweep(state.clone(), stop_tx.subscribe()));
        let schedule_task = match schedule {
            Some(schedule) => {
                let scheduler = crate::extract::schedule::Scheduler {
                    job: crate::extract::Job::new(
                        state.store.clone(),
                        settings.extract.clone(),
                        settings.tokenizer,
                        settings.belief_half_life_ms(),
                    )
                    .context("could not set up the scheduled extraction")?,
                    store: state.store.clone(),
                    schedule,
                    lease_ttl_ms: settings.schedule.lease_ttl_ms(),
                    holder: graph::lease::process_holder().to_string(),
                    project: settings.schedule.project.clone(),
                };
                Some(tokio::spawn(scheduler.run(stop_tx.subscribe()).instrument(
                    tracing::info_span!("job", job.name = "extraction_schedule"),
                )))
            }
            None => None,
        };
        let index_task = tokio::spawn(
            crate::recall::index::run(
                state.store.clone(),
                state.embedder.clone(),
                Duration::from_millis(settings.search.index_every_ms.max(10)),
                {
                    let state = state.clone();
                    Arc::new(move || state.capture.spool().used_bytes() > 0)
                },
                stop_tx.subscribe(),
            )
            .instrument(tracing::info_span!("job", job.name = "index")),
        );

        let mut stop_rx = stop_tx.subscribe();
        let server = poem::Server::new_with_acceptor(acceptor).run_with_graceful_shutdown(
            crate::api::routes(state.clone()),
            async move {
                let _ = stop_rx.wait_for(|v| *v).await;
            },
            Some(Duration::from_secs(10)),
        );
        let served = server.await;
        stop_tx.send_replace(true);
        tracing::info!("http server stopped; draining the capture spool");
        if writer_done.await.is_err() {
            tracing::error!("the capture writer ended abnormally; what it had not written stays in the spool and is replayed on the next start");
        }
        schema_task.abort();
        // Both saw the stop signal and let go of their leases, so another replica takes over
        // at once; give them a moment to say so.
        let _ = tokio::time::timeout(Duration::from_secs(2), sweep_task).await;
        if let Some(task) = schedule_task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
        index_task.abort();
        signals.abort();
        tracing::info!(
            spool.bytes = state.capture.spool().used_bytes(),
            "cairn stopped"
        );
        served.context("the http server failed")
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Applies the schema, retrying until Neo4j answers; then re-checks now and then so a
/// recreated database gets its schema back without restarting cairn.
async fn ensure_schema(state: Arc<AppState>, mut stop: watch::Receiver<bool>) {
    let mut delay = Duration::from_millis(500);
    let mut applied_once = state.embedder.is_none();
    loop {
        // The vector indexes follow the embedding model in use, so with one the schema is
        // applied once at start whatever its version (idempotent; an index of another
        // dimension is made again), then whenever it is behind.
        let dimensions = state.vector_dimensions();
        let current = graph::schema::version(&state.store).await;
        let outcome = match current {
            Ok(Some(v)) if v >= graph::schema::SCHEMA_VERSION && applied_once => Ok(false),
            Ok(_) => graph::schema::apply(&state.store, dimensions)
                .await
                .map(|_| true),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(applied) => {
                applied_once = true;
                if applied {
                    tracing::info!(version = graph::schema::SCHEMA_VERSION, "schema applied");
                }
                delay = Duration::from_secs(30);
            }
            Err(err) => {
                tracing::warn!(error = %err, retry_in_ms = delay.as_millis() as u64, "could not check or apply the schema");
                delay = (delay * 2).min(Duration::from_secs(10));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|v| *v) => return,
        }
    }
}

/// The lease the idle-session sweep is run under, followed by its idle time: one replica
/// sweeps at a time, among those that agree on what idle means.
const SWEEP_LEASE: &str = "abandon_sweep";

/// Marks sessions idle for longer than the configured time as abandoned. With several
/// replicas, the one holding the sweep lease sweeps; it renews the lease at each sweep (it
/// lives three sweep intervals), so another takes over when it stops.
async fn abandon_sweep(state: Arc<AppState>, mut stop: watch::Receiver<bool>) {
    let every = Duration::from_secs(state.settings.abandon_sweep_secs.max(1));
    let idle_ms = (state.settings.abandon_after_secs * 1000) as i64;
    let holder = graph::lease::process_holder();
    let lease = format!("{SWEEP_LEASE}:{}", state.settings.abandon_after_secs);
    let lease_ms = (every.as_millis() as i64 * 3).max(3_000);
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(every) => false,
            _ = stop.wait_for(|v| *v) => true,
        };
        if stopping {
            let _ = graph::lease::release(&state.store, &lease, holder, None).await;
            return;
        }
        match graph::lease::acquire(&state.store, &lease, holder, lease_ms, None).await {
            Ok(graph::lease::LeaseState::Held) => {}
            Ok(_) => continue,
            Err(err) => {
                tracing::debug!(error = %err, "abandon sweep skipped: no lease");
                continue;
            }
        }
        let encoding = state.settings.tokenizer;
        match graph::sessions::abandon_idle(&state.store, graph::now_ms() - idle_ms, |m| {
            crate::capture::summary::derive(m, encoding)
        })
        .instrument(tracing::info_span!("job", job.name = "abandon_sweep"))
        .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "idle sessions marked abandoned"),
            Err(err) => tracing::debug!(error = %err, "abandon sweep skipped"),
        }
    }
}
