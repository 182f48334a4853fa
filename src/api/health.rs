//! `/healthz` (the process answers), `/readyz` (Neo4j answers and the schema is current) and
//! `/metrics` (Prometheus text).

use std::{sync::Arc, time::Duration};

use poem_openapi::{payload::Json, payload::PlainText, ApiResponse, Object, OpenApi};

use super::ApiTags;
use crate::embed::Status;
use crate::graph::schema::{self, SCHEMA_VERSION};
use crate::state::AppState;

pub struct HealthApi(pub Arc<AppState>);

#[derive(Object)]
pub struct Health {
    pub status: String,
}

#[derive(Object)]
pub struct Readiness {
    /// `ready` or `unavailable`.
    pub status: String,
    /// Why it is not ready.
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    pub schema_version: Option<i64>,
    pub expected_schema_version: i64,
    /// Bytes captured but not yet written to Neo4j.
    pub spool_bytes: u64,
    /// `writing`, or `retrying` while the capture writer cannot get its transactions into
    /// Neo4j: captures are still acknowledged and wait in the spool.
    pub writer: String,
    /// Where search vectors come from. Readiness does not depend on it: without vectors
    /// search runs keyword-only.
    pub embeddings: Embeddings,
}

/// The embedding model as search sees it.
#[derive(Object)]
pub struct Embeddings {
    /// `ready`; `loading` (the embedded model, at start); `unavailable` (keyword-only:
    /// `reason` says why and what to run); `off` (`CAIRN_EMBED=off`).
    pub status: String,
    /// `keyword_only` unless `status` is `ready`, then `hybrid`.
    pub search: String,
    /// What makes the vectors: `local:all-MiniLM-L6-v2#unlabelled` or `remote:<model>#unlabelled`.
    #[oai(skip_serializing_if_is_none)]
    pub model: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub dimensions: Option<u32>,
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    /// How the model's cosines are read on the scale cairn's thresholds were set on
    /// (all-MiniLM-L6-v2's): an embedded model's as stated, a remote model's once measured
    /// on calibration pairs (absent until then; its cosines are read as they are meanwhile).
    #[oai(skip_serializing_if_is_none)]
    pub calibration: Option<CosineScale>,
}

/// `(cosine − unrelated) / span`, within 0..=1, is how a cosine reads.
#[derive(Object)]
pub struct CosineScale {
    /// The cosine that reads as unrelated (0).
    pub unrelated: f64,
    /// How much cosine above it reads as the same (1).
    pub span: f64,
    /// `false` for a remote model whose cosines did not follow all-MiniLM-L6-v2's on the
    /// calibration pairs: they are read as they are (unrelated 0, span 1), and measured again
    /// ten minutes later.
    pub fitted: bool,
}

impl Embeddings {
    pub fn of(embedder: Option<&crate::embed::Embedder>) -> Self {
        let Some(e) = embedder else {
            return Self {
                status: "off".into(),
                search: "keyword_only".into(),
                model: None,
                dimensions: None,
                reason: Some("CAIRN_EMBED=off".into()),
                calibration: None,
            };
        };
        let status = e.status();
        Self {
            status: status.as_str().into(),
            search: if status == Status::Ready {
                "hybrid"
            } else {
                "keyword_only"
            }
            .into(),
            model: Some(e.model().to_string()),
            dimensions: u32::try_from(e.dimensions()).ok(),
            reason: match status {
                Status::Unavailable(why) => Some(why),
                _ => None,
            },
            calibration: e.measured_calibration().map(|m| CosineScale {
                unrelated: m.scale.unrelated,
                span: m.scale.span,
                fitted: m.fitted,
            }),
        }
    }
}

#[derive(ApiResponse)]
pub enum ReadyResponse {
    /// Neo4j answers and the schema is at the expected version.
    #[oai(status = 200)]
    Ready(Json<Readiness>),
    /// Not ready; `reason` says why.
    #[oai(status = 503)]
    NotReady(Json<Readiness>),
}

/// Readiness probes must answer fast even when Neo4j hangs. A graph at a newer schema version
/// than this binary's is fine: schema changes are additive.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

#[OpenApi(tag = "ApiTags::Ops")]
impl HealthApi {
    /// Liveness: the process is up. Does not touch Neo4j.
    #[oai(path = "/healthz", method = "get")]
    async fn healthz(&self) -> Json<Health> {
        Json(Health {
            status: "ok".into(),
        })
    }

    /// Readiness: Neo4j answers and the schema is at the expected version.
    #[oai(path = "/readyz", method = "get")]
    async fn readyz(&self) -> ReadyResponse {
        let spool_bytes = self.0.capture.spool().used_bytes();
        let found = tokio::time::timeout(READY_TIMEOUT, schema::version(&self.0.store)).await;
        let (version, reason) = match found {
            Err(_) => (None, Some(format!("neo4j did not answer within {READY_TIMEOUT:?}"))),
            Ok(Err(err)) => (None, Some(format!("neo4j is not reachable: {err}"))),
            Ok(Ok(None)) => (None, Some("the schema has not been applied yet (run `cairn migrate`)".into())),
            Ok(Ok(Some(v))) if v < SCHEMA_VERSION => (
                Some(v),
                Some(format!("schema version {v} in the graph, {SCHEMA_VERSION} expected (run `cairn migrate`)")),
            ),
            Ok(Ok(Some(v))) => (Some(v), None),
        };
        let body = Readiness {
            status: if reason.is_none() {
                "ready"
            } else {
                "unavailable"
            }
            .into(),
            reason: reason.clone(),
            schema_version: version,
            expected_schema_version: SCHEMA_VERSION,
            spool_bytes,
            writer: if self.0.capture.writer_ok() {
                "writing"
            } else {
                "retrying"
            }
            .into(),
            embeddings: Embeddings::of(self.0.embedder.as_deref()),
        };
        if reason.is_none() {
            ReadyResponse::Ready(Json(body))
        } else {
            ReadyResponse::NotReady(Json(body))
        }
    }

    /// Prometheus metrics: requests and latency by route, Neo4j query latency, spool depth,
    /// writer batches.
    #[oai(path = "/metrics", method = "get")]
    async fn metrics(&self) -> PlainText<String> {
        metrics::gauge!("cairn_spool_bytes").set(self.0.capture.spool().used_bytes() as f64);
        PlainText(crate::telemetry::metrics_handle().render())
    }
}
