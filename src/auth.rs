//! API keys, scopes and per-key rate limits.
//!
//! A key reads `cairn_<id>_<secret>`: the id finds the stored key, the secret is 256 random
//! bits. Only `SHA-256(secret)` is stored. A slow password hash (argon2, bcrypt) exists to make
//! guessing *low-entropy* human passwords expensive; a 256-bit random secret cannot be guessed
//! either way, so a fast, constant-time-compared digest is the right tool and keeps every
//! request cheap.
//!
//! Every `/v1` route and `/mcp` needs `Authorization: Bearer <key>`. The key's project must be
//! the project the request touches and its scope (`read` < `write` < `admin`) strong enough;
//! otherwise 403 `forbidden` — the same answer whether or not the other project exists.

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use governor::{clock::Clock, DefaultKeyedRateLimiter, Quota, RateLimiter};
use poem::{Endpoint, IntoResponse, Middleware, Request, Response, Result};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult, Code};
use crate::graph::{keys, Store};

/// What a key may do; each scope includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Scope {
    Read,
    Write,
    Admin,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }
}

/// Who is calling: one project and a scope, or (only with `--insecure-no-auth`) anyone.
#[derive(Clone, Debug)]
pub struct Principal {
    /// `None` only in insecure local mode: every project.
    pub project: Option<String>,
    pub scope: Scope,
    pub key_id: Option<String>,
}

impl Principal {
    pub fn insecure() -> Self {
        Self {
            project: None,
            scope: Scope::Admin,
            key_id: None,
        }
    }

    /// Allows the request when the key belongs to `project` with at least `scope`.
    pub fn require(&self, project: &str, scope: Scope) -> ApiResult<()> {
        crate::api::trace::record_project(project);
        if self.project.as_deref().is_some_and(|p| p != project) {
            return Err(ApiError::forbidden());
        }
        if self.scope < scope {
            return Err(ApiError::new(Code::InsufficientScope).with_message(format!(
                "this key has `{}` scope; `{}` is needed",
                self.scope.as_str(),
                scope.as_str()
            )));
        }
        Ok(())
    }

    /// For routes addressed by a session id: the project the session must belong to.
    pub fn project_scope(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// Requires `scope` without a project (routes addressed by id check the project later).
    pub fn require_scope(&self, scope: Scope) -> ApiResult<()> {
        match &self.project {
            Some(p) => self.require(&p.clone(), scope),
            None => Ok(()),
        }
    }

    pub fn actor(&self) -> String {
        self.key_id
            .clone()
            .unwrap_or_else(|| "insecure-local".into())
    }
}

/// A freshly minted key: the text to hand out once, and what to store.
pub struct MintedKey {
    pub id: String,
    pub token: String,
    pub hash: String,
}

pub fn mint() -> MintedKey {
    let id = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let secret = hex::encode(secret);
    MintedKey {
        token: format!("cairn_{id}_{secret}"),
        hash: digest(&secret),
        id,
    }
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Splits `cairn_<id>_<secret>`.
fn parse_token(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix("cairn_")?;
    let (id, secret) = rest.split_once('_')?;
    (id.len() == 16 && secret.len() == 64).then_some((id, secret))
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A failed background re-check is tried again after this long.
const RECHECK_RETRY: Duration = Duration::from_secs(1);

/// A verified key and when to check it again.
struct Cached {
    key: keys::StoredKey,
    recheck_at: Instant,
    rechecking: bool,
}

type KeyCache = Arc<Mutex<HashMap<String, Cached>>>;

pub struct Authenticator {
    store: Store,
    insecure: bool,
    /// Verified keys by id. A key due for a re-check is still used while Neo4j is asked in
    /// the background, so no request waits on Neo4j for a key it has seen (capture goes on
    /// while Neo4j is away or slow); revocations through another process apply within
    /// `recheck` plus one lookup.
    cache: KeyCache,
    recheck: Duration,
    limiter: Option<DefaultKeyedRateLimiter<String>>,
}

impl Authenticator {
    /// `rate_per_sec` 0 disables rate limiting.
    pub fn new(
        store: Store,
        insecure: bool,
        rate_per_sec: u32,
        burst: u32,
        recheck: Duration,
    ) -> Self {
        let limiter = NonZeroU32::new(rate_per_sec).map(|rate| {
            let burst = NonZeroU32::new(burst.max(rate_per_sec)).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Self {
            store,
            insecure,
            cache: KeyCache::default(),
            recheck,
            limiter,
        }
    }

    pub fn forget(&self, key_id: &str) {
        self.cache.lock().expect("key cache lock").remove(key_id);
    }

    /// The principal for an `Authorization` header value (or its absence).
    pub async fn authenticate(&self, header: Option<&str>) -> ApiResult<Principal> {
        let Some(header) = header else {
            if self.insecure {
                return Ok(Principal::insecure());
            }
            return Err(ApiError::unauthorized(
                "send `Authorization: Bearer <key>`; create a key with `cairn keys create`",
            ));
        };
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `Bearer <key>`")
            })?;
        let (id, secret) =
            parse_token(token).ok_or_else(|| ApiError::unauthorized("malformed API key"))?;
        let stored = match self.cached(id) {
            Some(k) => k,
            None => {
                let k = keys::get(&self.store, id)
                    .await?
                    .ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))?;
                self.cache.lock().expect("key cache lock").insert(
                    id.to_string(),
                    Cached {
                        key: k.clone(),
                        recheck_at: Instant::now() + self.recheck,
                        rechecking: false,
                    },
                );
                k
            }
        };
        if stored.revoked_at.is_some()
            || !constant_time_eq(digest(secret).as_bytes(), stored.hash.as_bytes())
        {
            return Err(ApiError::unauthorized("unknown or revoked API key"));
        }
        let scope = Scope::parse(&stored.scope)
            .ok_or_else(|| ApiError::internal("stored key has an unknown scope"))?;
        Ok(Principal {
            project: Some(stored.project),
            scope,
            key_id: Some(id.to_string()),
        })
    }

    /// A key verified before; starts its re-check in the background when it is due.
    fn cached(&self, id: &str) -> Option<keys::StoredKey> {
        let mut cache = self.cache.lock().expect("key cache lock");
        let entry = cache.get_mut(id)?;
        if !entry.rechecking && Instant::now() >= entry.recheck_at {
            entry.rechecking = true;
            tokio::spawn(recheck(
                self.store.clone(),
                self.cache.clone(),
                id.to_string(),
                self.recheck,
            ));
        }
        Some(entry.key.clone())
    }

    /// Seconds to wait when `principal` is over its rate.
    fn throttle(&self, principal: &Principal) -> Option<u64> {
        let limiter = self.limiter.as_ref()?;
        let key = principal.key_id.clone()?;
        match limiter.check_key(&key) {
            Ok(()) => None,
            Err(not_until) => {
                let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
                Some(wait.as_secs().max(1))
            }
        }
    }
}

/// Looks a cached key up again. Only updates an entry still cached: a key forgotten (revoked)
/// meanwhile is not brought back.
async fn recheck(store: Store, cache: KeyCache, id: String, every: Duration) {
    let found = keys::get(&store, &id).await;
    let mut cache = cache.lock().expect("key cache lock");
    match found {
        Ok(None) => {
            cache.remove(&id);
        }
        Ok(Some(key)) => {
            if let Some(entry) = cache.get_mut(&id) {
                *entry = Cached {
                    key,
                    recheck_at: Instant::now() + every,
                    rechecking: false,
                };
            }
        }
        Err(err) => {
            tracing::debug!(key.id = %id, error = %err, "could not re-check an API key; it stays trusted");
            if let Some(entry) = cache.get_mut(&id) {
                entry.recheck_at = Instant::now() + RECHECK_RETRY;
                entry.rechecking = false;
            }
        }
    }
}

/// Middleware on `/v1` and `/mcp`: authenticates, rate-limits, and leaves the [`Principal`] in
/// the request for handlers (`poem::web::Data<&Principal>`).
pub struct RequireKey(pub Arc<Authenticator>);

impl<E: Endpoint> Middleware<E> for RequireKey {
    type Output = RequireKeyEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        RequireKeyEndpoint {
            inner: ep,
            auth: self.0.clone(),
        }
    }
}

pub struct RequireKeyEndpoint<E> {
    inner: E,
    auth: Arc<Authenticator>,
}

impl<E: Endpoint> Endpoint for RequireKeyEndpoint<E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> Result<Response> {
        let path = req.uri().path();
        let guarded = path.starts_with("/v1/") || path == "/v1" || path.starts_with("/mcp");
        if guarded {
            let header = req
                .headers()
                .get(poem::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let principal = match self.auth.authenticate(header.as_deref()).await {
                Ok(p) => p,
                Err(err) => {
                    err.log("authentication failed");
                    return Ok(crate::api::error::error_response(&err));
                }
            };
            if let Some(wait) = self.auth.throttle(&principal) {
                metrics::counter!("cairn_rate_limited_total").increment(1);
                let mut resp = crate::api::error::json_error(
                    Code::RateLimited,
                    &format!("too many requests for this key; retry in {wait} s"),
                    None,
                );
                resp.headers_mut().insert(
                    poem::http::header::RETRY_AFTER,
                    poem::http::HeaderValue::from_str(&wait.to_string()).expect("digits"),
                );
                return Ok(resp);
            }
            req.extensions_mut().insert(principal);
        }
        Ok(self.inner.call(req).await?.into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_parse_and_verify() {
        let k = mint();
        let (id, secret) = parse_token(&k.token).unwrap();
        assert_eq!(id, k.id);
        assert!(constant_time_eq(
            digest(secret).as_bytes(),
            k.hash.as_bytes()
        ));
        assert!(!constant_time_eq(digest("x").as_bytes(), k.hash.as_bytes()));
        assert!(parse_token("cairn_short_abc").is_none());
        assert_ne!(mint().token, k.token);
    }

    #[test]
    fn scopes_are_ordered_and_projects_enforced() {
        let p = Principal {
            project: Some("a".into()),
            scope: Scope::Write,
            key_id: Some("k".into()),
        };
        assert!(p.require("a", Scope::Read).is_ok());
        assert!(p.require("a", Scope::Write).is_ok());
        assert_eq!(
            p.require("a", Scope::Admin).unwrap_err().code(),
            "insufficient_scope"
        );
        assert_eq!(p.require("b", Scope::Read).unwrap_err().code(), "forbidden");
    }
}
