//! Request ids: taken from `X-Request-Id` when sane, made otherwise, echoed in the header and
//! every error body, and on the request's span so a log line can be tied to its request.

use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::helpers::{split, TestApp};

/// Log lines written by the subscriber, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn request_id(r: &reqwest::Response) -> String {
    r.headers()
        .get("x-request-id")
        .expect("every answer carries X-Request-Id")
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_sent_request_id_is_echoed_in_header_body_and_log() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    // The test runtime is single-threaded: the server's tasks log through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);
    // With a single scoped subscriber, tracing-core asks only the registering thread's
    // subscriber about a new callsite; tests on other threads would then switch our spans off.
    // A second (silent) one makes it ask each thread at every call.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let app = TestApp::spawn().await;

    let r = app
        .client
        .get(app.url("/v1/sessions/no-such-session"))
        .header("X-Request-Id", "trace-test-4711")
        .send()
        .await
        .unwrap();
    assert_eq!(request_id(&r), "trace-test-4711");
    let (status, body) = split(r).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "session_not_found");
    assert_eq!(body["error"]["request_id"], "trace-test-4711");

    let tied: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|l| l.contains("request_id=trace-test-4711"))
        .collect();
    let finished = tied
        .iter()
        .find(|l| l.contains("request finished"))
        .unwrap_or_else(|| {
            panic!(
                "no finished line for the request among {tied:?}; all: {:?}",
                logs.lines()
            )
        });
    assert!(
        finished.contains("http.route=/v1/sessions/:param0"),
        "{finished}"
    );
    assert!(finished.contains("http.status=404"), "{finished}");
    assert!(
        finished.contains(&format!("project={}", app.project)),
        "{finished}"
    );
    // The store's statement ran inside the request's span.
    assert!(
        tied.iter()
            .any(|l| l.contains(":store{db.op=\"rows\"") && l.contains("close")),
        "no store span under the request: {tied:?}"
    );
}

#[tokio::test]
async fn a_request_without_a_sane_id_gets_a_new_one() {
    let app = TestApp::spawn().await;
    let r = app
        .client
        .get(app.url("/v1/sessions/no-such-session"))
        .send()
        .await
        .unwrap();
    let made = request_id(&r);
    assert!(uuid::Uuid::parse_str(&made).is_ok(), "{made}");
    let (status, body) = split(r).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["request_id"], made.as_str());

    for hostile in ["has spaces in it", &"x".repeat(200), "quote\"d"] {
        let r = app
            .client
            .get(app.url("/healthz"))
            .header("X-Request-Id", hostile)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let given = request_id(&r);
        assert_ne!(given, hostile);
        assert!(uuid::Uuid::parse_str(&given).is_ok(), "{given}");
    }
    // Errors raised before any handler (unknown route) carry it too.
    let r = app
        .client
        .get(app.url("/v1/no-such-route"))
        .header("X-Request-Id", "route-miss-1")
        .send()
        .await
        .unwrap();
    assert_eq!(request_id(&r), "route-miss-1");
    let (status, body) = split(r).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "route_not_found");
    assert_eq!(body["error"]["request_id"], "route-miss-1");
}
