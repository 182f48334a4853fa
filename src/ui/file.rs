//! A file (`GET /ui/file?path=`): what `GET /v1/knowledge` knows about it — decisions (with
//! rejected alternatives and supersession), active beliefs informed by work on it, the
//! sessions that touched it and open todos naming it — from the same
//! [`crate::knowledge::report`].

use std::sync::Arc;

use maud::{html, Markup};
use poem::web::{Data, Query};
use poem::{handler, IntoResponse};
use serde::Deserialize;

use super::guard::Viewer;
use super::layout::{self, badge, none, session_link, subject_link, Nav};
use super::Page;
use crate::domain::limits::MAX_PATH_CHARS;
use crate::request::KnowledgeAsk;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct Params {
    path: Option<String>,
}

/// `GET /ui/file`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer, Query(q): Query<Params>) -> Page {
    let raw = q.path.as_deref().map(str::trim).filter(|p| !p.is_empty());
    // The same request as `GET /v1/knowledge?files=` (one file; its field named `path` here).
    let ask = match raw {
        Some(p) => Some(
            KnowledgeAsk::parse(&viewer.principal(), None, &[p.to_string()], None, None)
                .map_err(|e| super::failure(e.on("path")))?,
        ),
        None => None,
    };
    let path = ask.as_ref().and_then(|a| a.files.first().cloned());
    let form = html! {
        form.filter method="get" action="/ui/file" {
            label for="path" { "File path" }
            input #path type="text" name="path" value=(path.as_deref().unwrap_or(""))
                maxlength=(MAX_PATH_CHARS) placeholder="src/main.rs";
            button type="submit" { "Show" }
        }
    };
    let Some(path) = path else {
        let body = html! { (form) p { "What is known about a file: the decisions, beliefs, sessions and open todos behind it." } };
        return Ok(layout::page(&viewer, Nav::Other, "File", body).into_response());
    };
    let Some(ask) = ask else {
        return Err(super::failure(crate::error::ApiError::missing("path")));
    };
    let report = ask.run(&state).await.map_err(super::failure)?;
    let known = report.files.into_iter().find(|f| f.path == path);
    let body = render(form, known.as_ref());
    let title = format!("File {path}");
    Ok(layout::page(&viewer, Nav::Other, &title, body).into_response())
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(form: Markup, known: Option<&crate::knowledge::FileKnowledge>) -> Markup {
    html! {
        (form)
        @match &known {
            None => (none("Nothing is known about this file.")),
            Some(k) if k.is_empty() => (none("Nothing is known about this file.")),
            Some(k) => {
                section aria-labelledby="decisions" {
                    h2 #decisions { "Decisions" }
                    @if k.decisions.is_empty() { (none("No decisions about it.")) }
                    ul.plain {
                        @for d in &k.decisions {
                            li {
                                (subject_link(&d.subject)) ": " strong { (d.choice) }
                                @if d.superseded { " " (badge("superseded")) }
                                @if !d.rejected.is_empty() { " " span.muted { "over " (d.rejected.join(", ")) } }
                                @if !d.rationale.is_empty() { br; span.muted { (d.rationale) } }
                                br; span.muted { (d.at) @if let Some(s) = &d.session_id { " · " (session_link(s)) } }
                            }
                        }
                    }
                }
                section aria-labelledby="beliefs" {
                    h2 #beliefs { "Beliefs" }
                    @if k.beliefs.is_empty() { (none("No beliefs informed by work on it.")) }
                    ul.plain {
                        @for b in &k.beliefs {
                            li {
                                (layout::belief_link(&b.id, &b.content))
                                " " span.muted { (layout::percent(b.conviction)) " · " (b.evidence) " pieces of evidence" }
                            }
                        }
                    }
                }
                section aria-labelledby="sessions" {
                    h2 #sessions { "Sessions" }
                    @if k.sessions.is_empty() { (none("No sessions touched it.")) }
                    ul.plain {
                        @for s in &k.sessions {
                            li {
                                (session_link(&s.session_id)) " " (badge(&s.status)) " "
                                span.muted { (s.modes.join(", ")) " · " (s.last_touched) }
                                @if let Some(t) = &s.task { br; (t) }
                                @if let Some(sum) = &s.summary { br; span.summary { (sum) } }
                            }
                        }
                    }
                }
                section aria-labelledby="todos" {
                    h2 #todos { "Open todos" }
                    @if k.open_todos.is_empty() { (none("No open todos name it.")) }
                    ul.plain {
                        @for t in &k.open_todos {
                            li { (badge(&t.status)) " " (t.content) " (" (session_link(&t.session_id)) ")" }
                        }
                    }
                }
            }
        }
    }
}
