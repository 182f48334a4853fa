//! Decisions (`GET /ui/decisions?subject=`): a subject's history newest first — what was
//! chosen, why, what was rejected, what superseded what and the sessions behind them — or,
//! without a subject, the project's latest decisions. Read with the API's
//! [`crate::graph::decisions::list`].

use std::sync::Arc;

use maud::{html, Markup};
use poem::web::{Data, Query};
use poem::{handler, IntoResponse};
use serde::Deserialize;

use super::guard::Viewer;
use super::layout::{self, badge, none, session_link, subject_link, time, Nav};
use super::Page;
use crate::domain::limits::MAX_SUBJECT_CHARS;
use crate::request::DecisionsAsk;
use crate::state::AppState;

/// Decisions listed at most.
pub const LIMIT: i64 = 100;

#[derive(Deserialize)]
pub struct Params {
    subject: Option<String>,
}

/// `GET /ui/decisions`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer, Query(q): Query<Params>) -> Page {
    // The same request as `GET /v1/decisions?subject=`.
    let ask = DecisionsAsk::parse(
        &viewer.principal(),
        None,
        q.subject.as_deref(),
        None,
        Some(LIMIT),
    )
    .map_err(super::failure)?;
    let list = ask.run(&state).await.map_err(super::failure)?;
    let subject = q
        .subject
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let title = match &subject {
        Some(s) => format!("Decisions on “{s}”"),
        None => "Decisions".to_string(),
    };
    let body = render(subject.as_deref(), &list);
    Ok(layout::page(&viewer, Nav::Decisions, &title, body).into_response())
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(subject: Option<&str>, list: &[crate::graph::decisions::DecisionView]) -> Markup {
    html! {
        form.filter method="get" action="/ui/decisions" {
            label for="subject" { "Subject" }
            input #subject type="text" name="subject" value=(subject.unwrap_or(""))
                maxlength=(MAX_SUBJECT_CHARS);
            button type="submit" { "Show history" }
            @if subject.is_some() { " " a href="/ui/decisions" { "All subjects" } }
        }
        @if list.is_empty() { (none("No decisions.")) }
        ol.decisions {
            @for d in list {
                li #{ "d-" (d.id) } {
                    article.decision {
                        h2 { (subject_link(&d.subject)) }
                        p {
                            "Chose " strong { (d.choice) }
                            @if d.superseded_by.is_none() { " " (badge("in force")) } @else { " " (badge("superseded")) }
                        }
                        @if !d.rationale.is_empty() { p { "Because " (d.rationale) } }
                        @if !d.alternatives.is_empty() {
                            p { "Rejected: " @for (i, a) in d.alternatives.iter().enumerate() {
                                @if i > 0 { ", " } s { (a) }
                            } }
                        }
                        p.muted {
                            (time(d.at)) " · confidence " (layout::percent(d.confidence))
                            @if let Some(sid) = &d.session_id { " · in " (session_link(sid)) }
                            @if !d.files.is_empty() {
                                " · " @for f in &d.files { (layout::file_link(f)) " " }
                            }
                        }
                        @if let Some(old) = &d.supersedes {
                            p { "Supersedes " a href={ "#d-" (old) } { "an earlier decision" } }
                        }
                        @if let Some(new) = &d.superseded_by {
                            p { "Superseded by " a href={ "#d-" (new) } { "a later decision" } }
                        }
                    }
                }
            }
        }
    }
}
