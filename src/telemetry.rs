//! Logging and metrics set-up. Logs are human-readable by default and JSON with
//! `CAIRN_LOG_FORMAT=json`; the level comes from `RUST_LOG` (default `info`). The id of the
//! request a task serves lives here too (`current_request_id`), for error bodies.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::{fmt, EnvFilter};

/// Installs the global tracing subscriber. Safe to call more than once.
pub fn init_logging(default_level: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let json = std::env::var("CAIRN_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.compact().try_init()
    };
}

/// The process-wide Prometheus recorder; every app in the process renders from it.
pub fn metrics_handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(&[
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0,
            ])
            .expect("static buckets are valid")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (tests); rendering still works from ours
        // only when it is the installed one, so installation failure is reported.
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
        }
        handle
    })
}

tokio::task_local! {
    /// The id of the request being served on this task (`X-Request-Id`).
    static REQUEST_ID: String;
}

/// The id of the request this task serves, if it serves one.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// Runs `fut` as the request `id`: error bodies built inside it carry the id.
pub async fn with_request_id<F: std::future::Future>(id: String, fut: F) -> F::Output {
    REQUEST_ID.scope(id, fut).await
}
