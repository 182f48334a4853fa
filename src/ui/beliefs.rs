//! Beliefs: the list by status (`GET /ui/beliefs?status=`), one belief
//! (`GET /ui/beliefs/{id}`) with its conviction over time — replayed from its evidence by the
//! formula extraction and the API use ([`crate::domain::conviction`]) — and each piece of
//! evidence linked to its operation or pattern; approve / reject for admin keys
//! (`POST /ui/beliefs/{id}/review`, the API's [`crate::graph::beliefs::review`]).

use std::sync::Arc;

use maud::{html, Markup};
use poem::http::{header, StatusCode};
use poem::web::{Data, Form, Path, Query};
use poem::{handler, IntoResponse, Request, Response};
use serde::Deserialize;

use super::guard::Viewer;
use super::layout::{self, badge, none, operation_link, session_link, time, Nav};
use super::{plot, Page};
use crate::domain::{conviction, state::BeliefStatus};
use crate::error::{ApiError, Code};
use crate::graph::{beliefs, now_ms};
use crate::request::{BeliefsAsk, RecordId};
use crate::state::AppState;

/// Beliefs listed at most.
pub const LIMIT: i64 = 200;
/// Moments the conviction plot is computed at (besides each piece of evidence's).
pub const PLOT_POINTS: usize = 48;

#[derive(Deserialize)]
pub struct ListParams {
    status: Option<String>,
}

/// `GET /ui/beliefs`.
#[handler]
pub async fn list(
    state: Data<&Arc<AppState>>,
    viewer: Viewer,
    Query(q): Query<ListParams>,
) -> Page {
    // The same request as `GET /v1/beliefs?status=`; `all` is the UI's name for no status.
    let status = q.status.as_deref().filter(|s| s.trim() != "all");
    let ask = BeliefsAsk::parse(&viewer.principal(), None, status, Some(LIMIT))
        .map_err(super::failure)?;
    let found = ask.run(&state).await.map_err(super::failure)?;
    let current = ask.status.map_or("all", BeliefStatus::as_str);
    let body = render_list(current, &found);
    Ok(layout::page(&viewer, Nav::Beliefs, "Beliefs", body).into_response())
}

/// `GET /ui/beliefs/{id}`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer, Path(id): Path<String>) -> Page {
    let id = RecordId::parse("id", &id).map_err(super::failure)?;
    let b = beliefs::evidence(&state.store, &viewer.project, &id)
        .await
        .map_err(|e| super::failure(e.into()))?
        .ok_or_else(|| super::failure(ApiError::not_found(Code::BeliefNotFound, "id")))?;
    let now = now_ms();
    let half_life = state.settings.belief_half_life_ms();
    let evidence: Vec<conviction::Evidence> =
        b.evidence.iter().map(|e| e.as_evidence(now)).collect();
    let series = conviction::history(
        b.prior,
        b.created_at,
        half_life,
        &evidence,
        b.created_at.min(now),
        now,
        PLOT_POINTS,
    );
    let marks: Vec<plot::Mark> = b
        .evidence
        .iter()
        .map(|e| plot::Mark {
            at: e.at.min(now),
            supports: e.effect != "contradicts",
            label: format!("{} {}: {}", e.kind, e.effect, e.text),
        })
        .collect();
    let current = series.last().map_or(b.prior, |p| p.1);
    let body = render_page(&viewer, &b, current, half_life, &series, &marks);
    Ok(layout::page(&viewer, Nav::Beliefs, "Belief", body).into_response())
}

#[derive(Deserialize)]
pub struct ReviewForm {
    csrf: String,
    decision: String,
}

/// `POST /ui/beliefs/{id}/review`: approve or reject (admin keys), then back to the belief.
#[handler]
pub async fn review(
    req: &Request,
    state: Data<&Arc<AppState>>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<ReviewForm>,
) -> Page {
    viewer.check_form(req, &form.csrf)?;
    if !viewer.is_admin() {
        return Err(super::failure(
            ApiError::new(Code::InsufficientScope)
                .with_message("approving and rejecting beliefs needs an admin key"),
        ));
    }
    let to = match form.decision.as_str() {
        "approve" => BeliefStatus::Active,
        "reject" => BeliefStatus::Rejected,
        _ => {
            return Err(super::failure(ApiError::invalid(
                Code::InvalidStatus,
                "decision",
                "decision is `approve` or `reject`",
            )))
        }
    };
    let id = RecordId::parse("id", &id).map_err(super::failure)?;
    let principal = viewer.principal();
    let r = beliefs::review(&state.store, &viewer.project, &id, to, &principal.actor())
        .await
        .map_err(|e| super::failure(e.into()))?
        .ok_or_else(|| super::failure(ApiError::not_found(Code::BeliefNotFound, "id")))?;
    if r.status != to.as_str() {
        return Err(super::failure(ApiError::invalid(
            Code::InvalidTransition,
            "id",
            format!("a {} belief cannot become {}", r.previous, to.as_str()),
        )));
    }
    tracing::info!(belief.id = %id, status = %r.status, key.id = %viewer.key_id, "belief reviewed in the web ui");
    Ok(Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(
            header::LOCATION,
            format!("/ui/beliefs/{}", layout::encode(&id)),
        )
        .finish())
}

/// The list's markup (kept out of the handler's poll frame, see `project::render`).
fn render_list(current: &str, found: &[beliefs::BeliefView]) -> Markup {
    html! {
        nav.tabs aria-label="Belief status" {
            ul {
                @for s in ["all", "proposed", "active", "rejected"] {
                    li {
                        @if s == current {
                            a href={ "/ui/beliefs?status=" (s) } aria-current="page" { (s) }
                        } @else {
                            a href={ "/ui/beliefs?status=" (s) } { (s) }
                        }
                    }
                }
            }
        }
        @if found.is_empty() { (none("No beliefs.")) }
        @else {
            table {
                thead { tr {
                    th scope="col" { "Belief" } th scope="col" { "Status" }
                    th scope="col" { "Conviction" } th scope="col" { "Evidence" } th scope="col" { "Since" }
                } }
                tbody {
                    @for b in found {
                        tr {
                            td { (layout::belief_link(&b.id, &b.content)) }
                            td { (badge(&b.status)) }
                            td.num { (layout::percent(b.conviction)) }
                            td.num { "+" (b.supporting) " / −" (b.contradicting) }
                            td.when { (time(b.created_at)) }
                        }
                    }
                }
            }
        }
    }
}

/// One belief's markup.
fn render_page(
    viewer: &Viewer,
    b: &beliefs::BeliefEvidence,
    current: f64,
    half_life: i64,
    series: &[(i64, f64)],
    marks: &[plot::Mark],
) -> Markup {
    let reviewable = viewer.is_admin() && b.status != "rejected";
    html! {
        p.belief { (b.content) }
        dl.meta {
            dt { "Status" } dd { (badge(&b.status)) }
            dt { "Conviction" } dd { (layout::percent(current)) }
            @if let Some(c) = &b.category { dt { "Category" } dd { (c) } }
            dt { "Held since" } dd { (time(b.created_at)) }
        }
        @if reviewable {
            div.actions {
                @if b.status == "proposed" {
                    form method="post" action={ "/ui/beliefs/" (layout::encode(&b.id)) "/review" } {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        input type="hidden" name="decision" value="approve";
                        button.approve type="submit" { "Approve" }
                    }
                }
                form method="post" action={ "/ui/beliefs/" (layout::encode(&b.id)) "/review" } {
                    input type="hidden" name="csrf" value=(viewer.csrf);
                    input type="hidden" name="decision" value="reject";
                    button.reject type="submit" { "Reject" }
                }
            }
        }
        section aria-labelledby="over-time" {
            h2 #over-time { "Conviction over time" }
            (plot::conviction(series, marks))
            p.muted { "Each piece of evidence weighs its weight, halved every "
                (format!("{:.0}", half_life as f64 / 86_400_000.0)) " days; the prior fades the same way." }
        }
        section aria-labelledby="evidence" {
            h2 #evidence { "Evidence" }
            @if b.evidence.is_empty() { (none("No evidence yet.")) }
            @else {
                table {
                    thead { tr {
                        th scope="col" { "Effect" } th scope="col" { "Weight" } th scope="col" { "From" }
                        th scope="col" { "What" } th scope="col" { "When" }
                    } }
                    tbody {
                        @for e in b.evidence.iter().rev() {
                            tr {
                                td { span class={ "effect " (e.effect) } { (e.effect) } }
                                td.num { (format!("{:.2}", e.weight)) }
                                td {
                                    (e.kind) " "
                                    @match (&e.session_id, e.seq) {
                                        (Some(s), Some(seq)) => (operation_link(s, seq)),
                                        (Some(s), None) => (session_link(s)),
                                        _ => span.mono { (layout::short(e.source.as_deref().unwrap_or(""))) },
                                    }
                                }
                                td { (e.text) }
                                td.when { (time(e.at)) }
                            }
                        }
                    }
                }
            }
        }
    }
}
