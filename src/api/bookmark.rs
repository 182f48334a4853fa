//! `X-Cairn-Bookmark`: read-your-writes across replicas and a Neo4j cluster's readers. A
//! `/v1` request that committed writes answers with their Neo4j bookmarks in this header; a
//! `/v1` request that carries it has its reads answered only by a member that has applied
//! those writes. The value is opaque: send it back as it was answered. A malformed one is
//! refused (400 `invalid_bookmark`, `field` naming the header) before the handler runs.

use poem::http::{HeaderName, HeaderValue};
use poem::{Endpoint, IntoResponse, Middleware, Request, Response, Result};

use crate::error::{ApiError, Code};
use crate::graph::causal::{self, Bookmarks};

/// The header bookmarks travel in, both ways.
pub const HEADER: HeaderName = HeaderName::from_static("x-cairn-bookmark");

/// Runs each `/v1` request in a [`causal::scope`] after the bookmarks it came with, and
/// answers the bookmarks of what it wrote.
pub struct FollowBookmarks;

impl<E: Endpoint> Middleware<E> for FollowBookmarks {
    type Output = FollowBookmarksEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        FollowBookmarksEndpoint { inner: ep }
    }
}

pub struct FollowBookmarksEndpoint<E> {
    inner: E,
}

/// The bookmarks a request came with (repeated headers joined), or why they are refused.
fn sent(req: &Request) -> std::result::Result<Bookmarks, ApiError> {
    let refuse = |why: &dyn std::fmt::Display| {
        ApiError::invalid(
            Code::InvalidBookmark,
            causal::FIELD,
            format!(
                "`{}` is not a list of bookmarks ({why}); send back the value an answer carried",
                causal::FIELD
            ),
        )
    };
    let values = req
        .headers()
        .get_all(&HEADER)
        .iter()
        .map(HeaderValue::to_str)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| refuse(&"a character outside ASCII"))?;
    if values.is_empty() {
        return Ok(Bookmarks::default());
    }
    Bookmarks::parse(&values.join(",")).map_err(|e| refuse(&e))
}

impl<E: Endpoint> Endpoint for FollowBookmarksEndpoint<E> {
    type Output = Response;

    async fn call(&self, req: Request) -> Result<Response> {
        // Boxed and erased: the route tree's future is large (debug builds run it on small
        // stacks), and its type too deep for the compiler to lay out within another.
        let inner = |req| -> futures::future::BoxFuture<'_, Result<E::Output>> {
            Box::pin(self.inner.call(req))
        };
        if !req.uri().path().starts_with("/v1/") {
            return inner(req).await.map(IntoResponse::into_response);
        }
        let after = match sent(&req) {
            Ok(after) => after,
            Err(err) => {
                err.log("request refused");
                return Ok(super::error::error_response(&err));
            }
        };
        let (answered, made) = causal::scope(after, inner(req)).await;
        let mut resp = answered?.into_response();
        if resp.status().is_success() && !made.is_empty() {
            if let Ok(value) = HeaderValue::from_str(&made.header_value()) {
                resp.headers_mut().insert(HEADER, value);
            }
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_named_as_the_field_at_fault() {
        assert!(HEADER.as_str().eq_ignore_ascii_case(causal::FIELD));
    }

    #[test]
    fn repeated_headers_are_one_list_and_bad_ones_are_refused() {
        let req = Request::builder()
            .header(HEADER, "FB:a")
            .header(HEADER, "FB:b, FB:a")
            .finish();
        assert_eq!(sent(&req).unwrap().as_slice(), ["FB:a", "FB:b"]);
        let req = Request::builder().header(HEADER, "FB:a;DROP").finish();
        let err = sent(&req).unwrap_err();
        assert_eq!(err.code(), Code::InvalidBookmark);
        assert!(sent(&Request::builder().finish()).unwrap().is_empty());
    }
}
