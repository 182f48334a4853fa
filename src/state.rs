//! [`AppState`]: what every handler, hook, MCP tool and background job shares — built once by
//! [`crate::app::Application::build`].

use std::sync::Arc;

use crate::auth::Authenticator;
use crate::capture::Capture;
use crate::config::Settings;
use crate::graph::Store;

/// What every handler shares.
pub struct AppState {
    pub settings: Settings,
    pub store: Store,
    pub capture: Capture,
    pub auth: Arc<Authenticator>,
    /// Where vectors come from (the embedded model by default, a remote endpoint, or none
    /// with `CAIRN_EMBED=off`); search is fulltext-only without it or while it is not ready.
    pub embedder: Option<Arc<crate::embed::Embedder>>,
    /// Sessions' operation logs, for reconstruction and context.
    pub logs: crate::recall::logs::Logs,
    /// Failed web UI sign-ins per client address.
    pub signin_throttle: crate::ui::throttle::SignInThrottle,
}

impl AppState {
    /// The dimension of the vector indexes: the embedder's, else the configured one.
    pub fn vector_dimensions(&self) -> u32 {
        self.embedder
            .as_ref()
            .map_or(self.settings.neo4j.embed_dimensions, |e| {
                u32::try_from(e.dimensions()).unwrap_or(u32::MAX)
            })
    }

    /// Session search as configured (hybrid with an embedder, else fulltext).
    pub fn finder(&self) -> crate::recall::context::Finder<'_> {
        crate::recall::context::Finder {
            embedder: self.embedder.as_deref(),
            lists: crate::recall::search::Lists::Both,
            weights: crate::recall::search::Weights::from(&self.settings.search),
        }
    }
}
