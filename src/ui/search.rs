//! Search (`GET /ui/search?q=`): one box; the sessions that match (the API's session search)
//! and the single turns that match, with snippets (the API's turn search, validated and
//! scoped by the same [`crate::api::search::turn_search`]).

use std::sync::Arc;

use maud::{html, Markup};
use poem::web::{Data, Query};
use poem::{handler, IntoResponse};
use serde::Deserialize;

use super::guard::Viewer;
use super::layout::{self, badge, none, operation_link, session_link, time, Nav};
use super::Page;
use crate::recall::{search as session_search, turns};
use crate::request::{SearchAsk, TurnSearchAsk};
use crate::state::AppState;

/// Sessions and turns shown per search.
pub const LIMIT: i64 = 10;

#[derive(Deserialize)]
pub struct Params {
    q: Option<String>,
}

/// `GET /ui/search`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer, Query(p): Query<Params>) -> Page {
    let raw = p.q.unwrap_or_default();
    let form = html! {
        form.filter role="search" method="get" action="/ui/search" {
            label for="query" { "Search sessions and turns" }
            input #query type="search" name="q" value=(raw) maxlength="1000";
            button type="submit" { "Search" }
        }
    };
    if raw.trim().is_empty() {
        return Ok(layout::page(&viewer, Nav::Search, "Search", form).into_response());
    }
    // The same requests, parsed by the same rules, as `POST /v1/sessions/search` and
    // `POST /v1/search`.
    let principal = viewer.principal();
    let sessions_ask =
        SearchAsk::parse(&principal, None, &raw, Some(LIMIT)).map_err(super::failure)?;
    // The turns are searched once: session search ranks sessions by the same hits.
    let turn_hits = (LIMIT as usize).max(session_search::TURN_HITS);
    let turns_ask = TurnSearchAsk::parse(&principal, None, &raw, Some(turn_hits as i64), None)
        .map_err(super::failure)?;
    let mut turns = Box::pin(turns_ask.run(&state))
        .await
        .map_err(super::failure)?;
    let sessions = Box::pin(sessions_ask.run_with_turns(&state, &turns.hits))
        .await
        .map_err(super::failure)?;
    turns.hits.truncate(LIMIT as usize);
    let query = sessions_ask.query.as_str();
    let body = render(form, &sessions, &turns);
    let title = format!("Search: {query}");
    Ok(layout::page(&viewer, Nav::Search, &title, body).into_response())
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(form: Markup, sessions: &session_search::Found, turns: &turns::TurnResult) -> Markup {
    html! {
        (form)
        section aria-labelledby="found-sessions" {
            h2 #found-sessions { "Sessions" }
            @if sessions.hits.is_empty() { (none("No session matches.")) }
            ol.results {
                @for h in &sessions.hits {
                    li {
                        p.head {
                            (session_link(&h.session_id))
                            @if let Some(s) = &h.status { " " (badge(s)) }
                            " " span.muted { (layout::percent(h.similarity)) " match · "
                                (format!("{:.1}", h.days_ago)) " days ago" }
                        }
                        @if let Some(t) = &h.task { p.task { (t) } }
                        @if let Some(s) = &h.summary { p.summary { (s) } }
                    }
                }
            }
        }
        section aria-labelledby="found-turns" {
            h2 #found-turns { "Turns" }
            @if turns.hits.is_empty() { (none("No turn matches.")) }
            ol.results {
                @for t in &turns.hits {
                    li {
                        p.head {
                            span class={ "type " (t.kind) } { (t.kind) } " "
                            @if t.session_id.is_empty() { span.muted { "outside any session" } }
                            @else if t.seq > 0 { (operation_link(&t.session_id, t.seq)) }
                            @else { (session_link(&t.session_id)) }
                            " " span.muted { (time(t.at)) }
                        }
                        p.snippet { (t.snippet) }
                    }
                }
            }
        }
    }
}
