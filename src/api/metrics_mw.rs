//! Request counts and latency by route template (`/v1/sessions/:id/operations`), never by raw
//! path, so label cardinality stays bounded.

use std::time::Instant;

use poem::{Endpoint, IntoResponse, Middleware, PathPattern, Request, Response, Result};

pub struct RequestMetrics;

impl<E: Endpoint> Middleware<E> for RequestMetrics {
    type Output = RequestMetricsEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        RequestMetricsEndpoint { inner: ep }
    }
}

pub struct RequestMetricsEndpoint<E> {
    inner: E,
}

impl<E: Endpoint> Endpoint for RequestMetricsEndpoint<E> {
    type Output = Response;

    async fn call(&self, req: Request) -> Result<Response> {
        let started = Instant::now();
        let method = req.method().to_string();
        let resp = self.inner.call(req).await?.into_response();
        let route = resp
            .data::<PathPattern>()
            .map_or_else(|| "unmatched".to_string(), |p| p.0.to_string());
        let status = resp.status().as_u16().to_string();
        let elapsed = started.elapsed().as_secs_f64();
        metrics::counter!("cairn_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status.clone())
            .increment(1);
        metrics::histogram!("cairn_http_request_duration_seconds", "method" => method.clone(), "route" => route.clone())
            .record(elapsed);
        tracing::debug!(http.method = %method, http.route = %route, http.status = %status, duration_ms = elapsed * 1000.0, "request");
        Ok(resp)
    }
}
