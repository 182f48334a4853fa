//! Settings from flags and `CAIRN_*` environment variables. Secrets are wrapped in [`Secret`]
//! so that no `Debug` or log line can print them.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;

/// A string that never prints.
#[derive(Clone, Default)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "\"***\"" })
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

/// Which BPE encoding token counts use.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[value(name = "o200k_base")]
    O200kBase,
    #[value(name = "cl100k_base")]
    Cl100kBase,
}

/// How to reach Neo4j. Shared by every command that talks to the database.
#[derive(Args, Clone, Debug)]
pub struct Neo4jSettings {
    /// Bolt URI of the Neo4j server.
    #[arg(
        long = "neo4j-uri",
        env = "CAIRN_NEO4J_URI",
        default_value = "bolt://127.0.0.1:7687"
    )]
    pub uri: String,
    #[arg(long = "neo4j-user", env = "CAIRN_NEO4J_USER", default_value = "neo4j")]
    pub user: String,
    #[arg(
        long = "neo4j-password",
        env = "CAIRN_NEO4J_PASSWORD",
        default_value = "",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub password: Secret,
    /// Upper bound for any one query; past it the caller gets `neo4j_unavailable`.
    #[arg(
        long = "neo4j-timeout-ms",
        env = "CAIRN_NEO4J_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub timeout_ms: u64,
    /// Connections cairn opens to Neo4j in all: the capture writer gets one per lane plus
    /// one (at most half of them), request handlers the rest.
    #[arg(
        long = "neo4j-max-connections",
        env = "CAIRN_NEO4J_MAX_CONNECTIONS",
        default_value_t = 16
    )]
    pub max_connections: usize,
    /// Dimension of the vectors of a remote embeddings model (`CAIRN_EMBED_BASE_URL`); the
    /// embedded model's is 384. The vector indexes follow the model in use.
    #[arg(
        long = "embed-dimensions",
        env = "CAIRN_EMBED_DIMENSIONS",
        default_value_t = 384
    )]
    pub embed_dimensions: u32,
}

impl Neo4jSettings {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Whether search uses vectors at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedSwitch {
    /// Vectors from the embedded model, or from `CAIRN_EMBED_BASE_URL` when set.
    #[default]
    On,
    /// No vectors: search and context run on fulltext alone.
    Off,
}

/// Which model the embedded backend runs (src/embed/local/model.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum EmbedLocalModel {
    /// all-MiniLM-L6-v2: 6 layers.
    #[default]
    #[value(name = "all-MiniLM-L6-v2")]
    AllMiniLmL6V2,
    /// e5-small-v2: 12 layers; closer by meaning, at twice the work per text.
    #[value(name = "e5-small-v2")]
    E5SmallV2,
}

/// Where vectors come from: the embedded model (all-MiniLM-L6-v2 by default), an
/// OpenAI-compatible `/embeddings` endpoint (`CAIRN_EMBED_BASE_URL`), or nowhere
/// (`CAIRN_EMBED=off`).
#[derive(Args, Clone, Debug, Default)]
pub struct EmbedSettings {
    /// `off` turns vectors off (fulltext search only).
    #[arg(
        id = "embed",
        long = "embed",
        env = "CAIRN_EMBED",
        value_enum,
        default_value = "on"
    )]
    pub switch: EmbedSwitch,
    /// The embedded model (when `CAIRN_EMBED_BASE_URL` is unset).
    #[arg(
        id = "embed_local_model",
        long = "embed-local-model",
        env = "CAIRN_EMBED_LOCAL_MODEL",
        value_enum,
        default_value = "all-MiniLM-L6-v2"
    )]
    pub local_model: EmbedLocalModel,
    /// Directory of the embedded model's files (`scripts/embed-model fetch MODEL` puts them
    /// in `.cairn/models/MODEL`, the default).
    #[arg(
        id = "embed_model_dir",
        long = "embed-model-dir",
        env = "CAIRN_EMBED_MODEL_DIR"
    )]
    pub model_dir: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible API (`https://api.openai.com/v1`, a local server…);
    /// unset: the embedded model.
    #[arg(
        id = "embed_base_url",
        long = "embed-base-url",
        env = "CAIRN_EMBED_BASE_URL"
    )]
    pub base_url: Option<String>,
    /// Embedding model name at the remote endpoint (the embedded one is
    /// `CAIRN_EMBED_LOCAL_MODEL`).
    #[arg(
        id = "embed_model",
        long = "embed-model",
        env = "CAIRN_EMBED_MODEL",
        default_value = "text-embedding-3-small"
    )]
    pub model: String,
    /// API key for the embeddings endpoint; `CAIRN_LLM_API_KEY` is used when this is empty.
    #[arg(
        id = "embed_api_key",
        long = "embed-api-key",
        env = "CAIRN_EMBED_API_KEY",
        default_value = "",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub api_key: Secret,
    /// Deadline of one embeddings request.
    #[arg(
        id = "embed_timeout_ms",
        long = "embed-timeout-ms",
        env = "CAIRN_EMBED_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub timeout_ms: u64,
    /// Attempts per embeddings request before the batch is left for a later retry.
    #[arg(
        id = "embed_attempts",
        long = "embed-attempts",
        env = "CAIRN_EMBED_ATTEMPTS",
        default_value_t = 3
    )]
    pub attempts: u32,
    /// First wait (ms) before a session whose turns or search document failed to embed is
    /// tried again; it doubles with each failure, up to an hour. After a first failure
    /// another replica may try at once.
    #[arg(
        id = "embed_retry_ms",
        long = "embed-retry-ms",
        env = "CAIRN_EMBED_RETRY_MS",
        default_value_t = crate::embed::RETRY_MS,
        value_parser = clap::value_parser!(u64).range(1..=3_600_000)
    )]
    pub retry_ms: u64,
    /// Texts per embeddings request (per forward pass of the embedded model).
    #[arg(
        id = "embed_batch",
        long = "embed-batch",
        env = "CAIRN_EMBED_BATCH",
        default_value_t = 32
    )]
    pub batch: usize,
}

/// Search documents and ranking.
#[derive(Args, Clone, Debug)]
pub struct SearchSettings {
    /// How often the background indexer looks for changed sessions.
    #[arg(
        id = "search_index_every_ms",
        long = "search-index-every-ms",
        env = "CAIRN_SEARCH_INDEX_EVERY_MS",
        default_value_t = 500
    )]
    pub index_every_ms: u64,
    /// Weight of similarity in the re-ranking score.
    #[arg(
        id = "search_weight_similarity",
        long = "search-weight-similarity",
        env = "CAIRN_SEARCH_WEIGHT_SIMILARITY",
        default_value_t = 0.6
    )]
    pub weight_similarity: f64,
    /// Weight of recency (1/(1+days/30)) in the re-ranking score.
    #[arg(
        id = "search_weight_recency",
        long = "search-weight-recency",
        env = "CAIRN_SEARCH_WEIGHT_RECENCY",
        default_value_t = 0.3
    )]
    pub weight_recency: f64,
    /// Weight of importance (decisions and progress, capped at 1) in the re-ranking score.
    #[arg(
        id = "search_weight_importance",
        long = "search-weight-importance",
        env = "CAIRN_SEARCH_WEIGHT_IMPORTANCE",
        default_value_t = 0.1
    )]
    pub weight_importance: f64,
    /// Cosine (on the common scale) from which a search hit sharing no word with the query
    /// bears on it by meaning; below it, the nearest strangers are left out (0: never).
    #[arg(
        id = "search_min_cosine",
        long = "search-min-cosine",
        env = "CAIRN_SEARCH_MIN_COSINE",
        default_value_t = crate::recall::turns::MIN_COSINE
    )]
    pub min_cosine: f64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            index_every_ms: 500,
            weight_similarity: 0.6,
            weight_recency: 0.3,
            weight_importance: 0.1,
            min_cosine: crate::recall::turns::MIN_COSINE,
        }
    }
}

/// Everything `cairn serve` needs.
#[derive(Args, Clone, Debug)]
pub struct Settings {
    #[command(flatten)]
    pub neo4j: Neo4jSettings,

    #[command(flatten)]
    pub embed: EmbedSettings,

    #[command(flatten)]
    pub search: SearchSettings,

    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "CAIRN_BIND", default_value = "127.0.0.1:8420")]
    pub bind: SocketAddr,

    /// Directory of the durable capture spool.
    #[arg(long, env = "CAIRN_SPOOL_DIR", default_value = ".cairn/spool")]
    pub spool_dir: PathBuf,

    /// Bytes the spool may hold before capture answers 503 `spool_full`.
    #[arg(long, env = "CAIRN_SPOOL_MAX_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub spool_max_bytes: u64,

    /// Size of a spool segment file. Segments are written full of zeros ahead of use, so a
    /// capture's fsync writes only its own blocks; the spool keeps the current and the next.
    #[arg(long, env = "CAIRN_SPOOL_SEGMENT_BYTES", default_value_t = 32 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(65_536..))]
    pub spool_segment_bytes: u64,

    /// How long routes other than `operations` wait for their write to reach Neo4j before
    /// answering 202 (accepted, durable, applied later).
    #[arg(long, env = "CAIRN_SYNC_WAIT_MS", default_value_t = 3_000)]
    pub sync_wait_ms: u64,

    /// Transactions the capture writer runs at once. Each session's operations always go
    /// through one of them, so their order holds; more lanes use more of Neo4j's cores.
    #[arg(long, env = "CAIRN_WRITER_LANES", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub writer_lanes: u16,

    /// Memory for cached session operation logs (reconstruction, context), in MiB; 0 turns
    /// the cache off. Entries are exact: a log is extended by what was appended since.
    #[arg(long, env = "CAIRN_RECALL_CACHE_MB", default_value_t = 64)]
    pub recall_cache_mb: u64,

    /// Memory for the vectors of small projects the shared vector indexes answer with too few
    /// of their own, held to compare them in memory, in MiB; 0 compares them in Neo4j on
    /// every search. Kept current with what the turn indexer stores.
    #[arg(long, env = "CAIRN_HELD_VECTORS_MB", default_value_t = 64)]
    pub held_vectors_mb: u64,

    /// Tokenizer for stored token counts and context budgets.
    #[arg(
        long,
        env = "CAIRN_TOKENIZER",
        value_enum,
        default_value = "o200k_base"
    )]
    pub tokenizer: Encoding,

    /// Sessions with no activity for this many seconds are marked abandoned.
    #[arg(long, env = "CAIRN_ABANDON_AFTER_SECS", default_value_t = 4 * 3600)]
    pub abandon_after_secs: u64,

    /// How often the abandon sweep runs.
    #[arg(long, env = "CAIRN_ABANDON_SWEEP_SECS", default_value_t = 60)]
    pub abandon_sweep_secs: u64,

    /// Largest request body accepted, in bytes.
    #[arg(long, env = "CAIRN_MAX_BODY_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Serve without API keys (every request may touch every project). Refused unless `bind`
    /// is a loopback address.
    #[arg(long, env = "CAIRN_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,

    /// Requests per second allowed per API key (0: unlimited).
    #[arg(long, env = "CAIRN_RATE_LIMIT_PER_SEC", default_value_t = 200)]
    pub rate_limit_per_sec: u32,

    /// Burst size of the per-key token bucket.
    #[arg(long, env = "CAIRN_RATE_LIMIT_BURST", default_value_t = 400)]
    pub rate_limit_burst: u32,

    /// Seconds a verified API key is trusted before it is checked again in Neo4j. The check
    /// runs in the background: no request waits for it, so keys keep working while Neo4j is
    /// away. Revocations made through this server apply at once.
    #[arg(long, env = "CAIRN_KEY_RECHECK_SECS", default_value_t = 30)]
    pub key_recheck_secs: u64,

    /// Hours a web UI sign-in lasts (it ends sooner on sign-out or when its key is revoked).
    #[arg(long, env = "CAIRN_UI_SESSION_HOURS", default_value_t = 12, value_parser = clap::value_parser!(u64).range(1..=720))]
    pub ui_session_hours: u64,

    /// Failed web UI sign-ins allowed per client address within `ui_signin_window_secs`;
    /// past them the address is refused sign-in (429, `Retry-After`) until the window ends
    /// (0: no limit).
    #[arg(long, env = "CAIRN_UI_SIGNIN_FAILURES", default_value_t = 10)]
    pub ui_signin_failures: u32,

    /// The window, in seconds, over which failed web UI sign-ins are counted.
    #[arg(long, env = "CAIRN_UI_SIGNIN_WINDOW_SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub ui_signin_window_secs: u64,

    /// Half-life of belief evidence, in days.
    #[arg(long, env = "CAIRN_BELIEF_HALF_LIFE_DAYS", default_value_t = 90.0)]
    pub belief_half_life_days: f64,

    #[command(flatten)]
    pub extract: ExtractSettings,

    #[command(flatten)]
    pub schedule: ScheduleSettings,
}

/// The pattern-extraction job: the LLM endpoint, its price, and how beliefs are approved.
/// Shared by `cairn serve` (the `/v1/extraction/runs` route) and `cairn extract`.
#[derive(Args, Clone, Debug)]
pub struct ExtractSettings {
    /// Base URL of an OpenAI-compatible API (`…/v1`). Unset: mining-only mode, no LLM calls.
    #[arg(long = "llm-base-url", env = "CAIRN_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name sent with each request.
    #[arg(
        long = "llm-model",
        env = "CAIRN_LLM_MODEL",
        default_value = "gpt-4o-mini"
    )]
    pub llm_model: String,
    #[arg(
        long = "llm-api-key",
        env = "CAIRN_LLM_API_KEY",
        default_value = "",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub llm_api_key: Secret,
    /// Deadline of one LLM HTTP request; a request that times out is sent again like a 5xx, so
    /// one call takes at most (retries + 1) times this.
    #[arg(
        long = "llm-timeout-secs",
        env = "CAIRN_LLM_TIMEOUT_SECS",
        default_value_t = 120
    )]
    pub llm_timeout_secs: u64,
    /// Retries on 429, 5xx and timeouts (honouring Retry-After, else exponential backoff).
    #[arg(
        long = "llm-max-retries",
        env = "CAIRN_LLM_MAX_RETRIES",
        default_value_t = 3
    )]
    pub llm_max_retries: usize,
    /// LLM requests in flight at once (and sessions analysed at once).
    #[arg(
        long = "llm-concurrency",
        env = "CAIRN_LLM_CONCURRENCY",
        default_value_t = 4
    )]
    pub llm_concurrency: usize,
    /// Price per 1000 prompt tokens, for the run's cost estimate.
    #[arg(
        long = "llm-price-prompt-per-1k",
        env = "CAIRN_LLM_PRICE_PROMPT_PER_1K",
        default_value_t = 0.00015
    )]
    pub price_prompt_per_1k: f64,
    /// Price per 1000 completion tokens, for the run's cost estimate.
    #[arg(
        long = "llm-price-completion-per-1k",
        env = "CAIRN_LLM_PRICE_COMPLETION_PER_1K",
        default_value_t = 0.0006
    )]
    pub price_completion_per_1k: f64,
    /// Token budget of the session digest in a prompt.
    #[arg(
        long = "extract-digest-tokens",
        env = "CAIRN_EXTRACT_DIGEST_TOKENS",
        default_value_t = 6_000
    )]
    pub digest_tokens: usize,
    /// Proposed beliefs whose conviction reaches this become active without review
    /// (unset: every proposed belief waits for approval).
    #[arg(
        long = "auto-approve-conviction",
        env = "CAIRN_AUTO_APPROVE_CONVICTION"
    )]
    pub auto_approve_conviction: Option<f64>,
    /// Word-overlap similarity (0..1) above which a suggested belief joins an existing one.
    #[arg(
        long = "belief-match-threshold",
        env = "CAIRN_BELIEF_MATCH_THRESHOLD",
        default_value_t = 0.6
    )]
    pub belief_match_threshold: f64,
    /// Seconds a run's claim on a session lives without its heartbeat (renewed every third
    /// of it). A run that dies leaves its sessions to others after this long; keep it at most
    /// half the schedule's lease (`CAIRN_EXTRACT_LEASE_TTL_SECS`).
    #[arg(
        long = "extract-claim-ttl-secs",
        env = "CAIRN_EXTRACT_CLAIM_TTL_SECS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub claim_ttl_secs: u64,
}

impl ExtractSettings {
    pub fn llm_timeout(&self) -> Duration {
        Duration::from_secs(self.llm_timeout_secs.max(1))
    }

    pub fn claim_ttl_ms(&self) -> i64 {
        (self.claim_ttl_secs.max(1) * 1000) as i64
    }
}

/// The extraction job on a schedule, run by `cairn serve` (one replica at a time, under a
/// lease in Neo4j).
#[derive(Args, Clone, Debug)]
pub struct ScheduleSettings {
    /// When `cairn serve` runs extraction over every project: a cron expression of 5 fields
    /// (minute hour day-of-month month day-of-week) or 6 with seconds first, in
    /// `CAIRN_EXTRACT_TZ`; `0 3 * * *` is 03:00 every night. Unset: never (the default).
    #[arg(long = "extract-schedule", env = "CAIRN_EXTRACT_SCHEDULE")]
    pub schedule: Option<String>,
    /// The IANA time zone the schedule is read in (`UTC`, `Europe/Paris`…).
    #[arg(long = "extract-tz", env = "CAIRN_EXTRACT_TZ", default_value = "UTC")]
    pub tz: String,
    /// Only this project in scheduled runs (default: every project); its lease is its own.
    #[arg(
        id = "extract_schedule_project",
        long = "extract-schedule-project",
        env = "CAIRN_EXTRACT_SCHEDULE_PROJECT"
    )]
    pub project: Option<String>,
    /// Seconds the scheduled run's lease lives without its heartbeat (renewed every third of
    /// it): how soon another replica takes over the run of one that died.
    #[arg(
        long = "extract-lease-ttl-secs",
        env = "CAIRN_EXTRACT_LEASE_TTL_SECS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub lease_ttl_secs: u64,
}

impl ScheduleSettings {
    pub fn lease_ttl_ms(&self) -> i64 {
        (self.lease_ttl_secs.max(1) * 1000) as i64
    }
}

impl Settings {
    pub fn belief_half_life_ms(&self) -> i64 {
        (self.belief_half_life_days * 86_400_000.0) as i64
    }

    pub fn sync_wait(&self) -> Duration {
        Duration::from_millis(self.sync_wait_ms)
    }
}
