//! A session as recall draws on it: what context, search and a task's history need of it.

pub use crate::graph::sessions::ScopeSession;
