//! Every request gets an id and a span: the id comes from `X-Request-Id` when it is sane (at
//! most 128 characters of `[A-Za-z0-9._:-]`), else a new UUID; it is answered in the
//! `X-Request-Id` header and in every error body. The `request` span carries the method, the
//! route template (`/v1/sessions/:id/operations`, never the raw path), the project once known,
//! the status and the duration; counts and latency go to Prometheus by route template, so
//! label cardinality stays bounded.

use std::time::Instant;

use poem::http::{HeaderName, HeaderValue};
use poem::{Endpoint, IntoResponse, Middleware, PathPattern, Request, Response, Result};
use tracing::Instrument;

/// The header a request id travels in, both ways.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

const MAX_REQUEST_ID_CHARS: usize = 128;

/// The id a client sent, when it is safe to log and echo; otherwise `None`.
pub fn accepted_request_id(sent: Option<&HeaderValue>) -> Option<String> {
    let id = sent?.to_str().ok()?;
    let sane = !id.is_empty()
        && id.len() <= MAX_REQUEST_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    sane.then(|| id.to_string())
}

/// Records the project a request touches on the request's span.
pub fn record_project(project: &str) {
    tracing::Span::current().record("project", tracing::field::display(project));
}

pub struct RequestTrace;

impl<E: Endpoint> Middleware<E> for RequestTrace {
    type Output = RequestTraceEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        RequestTraceEndpoint { inner: ep }
    }
}

pub struct RequestTraceEndpoint<E> {
    inner: E,
}

impl<E: Endpoint> Endpoint for RequestTraceEndpoint<E> {
    type Output = Response;

    async fn call(&self, req: Request) -> Result<Response> {
        let started = Instant::now();
        let id = accepted_request_id(req.headers().get(&REQUEST_ID))
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let method = req.method().to_string();
        let span = tracing::info_span!(
            "request",
            request_id = %id,
            http.method = %method,
            http.route = tracing::field::Empty,
            project = tracing::field::Empty,
            http.status = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        // Boxed: the route tree's future is large, and debug builds run it on small stacks.
        let inner = Box::pin(self.inner.call(req));
        let answered = crate::telemetry::with_request_id(id.clone(), inner)
            .instrument(span.clone())
            .await;
        let mut resp = answered?.into_response();
        let route = resp
            .data::<PathPattern>()
            .map_or_else(|| "unmatched".to_string(), |p| p.0.to_string());
        let status = resp.status().as_u16();
        let elapsed = started.elapsed().as_secs_f64();
        span.record("http.route", tracing::field::display(&route));
        span.record("http.status", status);
        span.record("duration_ms", elapsed * 1000.0);
        span.in_scope(|| {
            if resp.status().is_server_error() {
                tracing::warn!("request finished");
            } else {
                tracing::debug!("request finished");
            }
        });
        let status = status.to_string();
        metrics::counter!("cairn_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status)
            .increment(1);
        metrics::histogram!("cairn_http_request_duration_seconds", "method" => method, "route" => route)
            .record(elapsed);
        if let Ok(value) = HeaderValue::from_str(&id) {
            resp.headers_mut().insert(REQUEST_ID, value);
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(v: &str) -> Option<String> {
        accepted_request_id(Some(&HeaderValue::from_str(v).unwrap()))
    }

    #[test]
    fn sane_ids_are_kept_others_replaced() {
        assert_eq!(sent("abc-123_x.y:z").as_deref(), Some("abc-123_x.y:z"));
        assert_eq!(sent(""), None);
        assert_eq!(sent("has space"), None);
        assert_eq!(sent("<script>"), None);
        assert_eq!(
            sent(&"a".repeat(MAX_REQUEST_ID_CHARS)).map(|s| s.len()),
            Some(128)
        );
        assert_eq!(sent(&"a".repeat(MAX_REQUEST_ID_CHARS + 1)), None);
        assert_eq!(accepted_request_id(None), None);
    }
}
