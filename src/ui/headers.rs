//! The headers every `/ui` response carries: a Content-Security-Policy that allows nothing
//! but this server's stylesheet and forms (no script at all, no framing), no MIME sniffing,
//! no referrer to other sites (same-origin forms keep their `Origin`), pages never cached.

use poem::http::{header, HeaderValue};
use poem::Response;

/// The policy: only same-origin styles and images (and `data:` images), forms posting here.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
                       form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Adds the security headers to `resp`; `Cache-Control: no-store` unless it set its own.
pub fn secure(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}
