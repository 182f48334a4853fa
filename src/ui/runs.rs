//! Extraction runs (`GET /ui/runs`): each run's sessions analysed, patterns, beliefs
//! created / reinforced / contradicted, LLM tokens and estimated cost, newest first.

use std::sync::Arc;

use maud::{html, Markup};
use poem::web::Data;
use poem::{handler, IntoResponse};

use super::guard::Viewer;
use super::layout::{self, badge, none, time, Nav};
use super::Page;
use crate::graph::extraction;
use crate::state::AppState;

/// Runs listed at most.
pub const LIMIT: i64 = 50;

/// `GET /ui/runs`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer) -> Page {
    let runs = extraction::run_list(&state.store, &viewer.project, LIMIT)
        .await
        .map_err(|e| super::failure(e.into()))?;
    let body = render(&runs);
    Ok(layout::page(&viewer, Nav::Runs, "Extraction runs", body).into_response())
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(runs: &[extraction::RunView]) -> Markup {
    html! {
        @if runs.is_empty() { (none("No extraction runs yet (`cairn extract`, or POST /v1/extraction/runs).")) }
        @else {
            table.runs {
                thead { tr {
                    th scope="col" { "Started" } th scope="col" { "Status" } th scope="col" { "Mode" }
                    th scope="col" { "Sessions" } th scope="col" { "Patterns" }
                    th scope="col" { "Beliefs created" } th scope="col" { "Reinforced" }
                    th scope="col" { "Contradicted" } th scope="col" { "Tokens" } th scope="col" { "Cost" }
                } }
                tbody {
                    @for r in runs {
                        tr {
                            td.when { (time(r.started_at)) }
                            td { (badge(&r.status)) }
                            td { (r.mode) " " span.muted { (r.prompt_version) } }
                            td.num { (r.sessions) @if r.sessions_failed > 0 { " (" (r.sessions_failed) " failed)" } }
                            td.num { (r.patterns) }
                            td.num { (r.beliefs_created) }
                            td.num { (r.beliefs_reinforced) }
                            td.num { (r.beliefs_contradicted) }
                            td.num { (r.prompt_tokens + r.completion_tokens) }
                            td.num { (format!("${:.4}", r.cost_estimate)) }
                        }
                        @if !r.errors.is_empty() {
                            tr.errors { td colspan="10" {
                                ul.plain { @for e in &r.errors { li.error { (e) } } }
                            } }
                        }
                    }
                }
            }
        }
    }
}
