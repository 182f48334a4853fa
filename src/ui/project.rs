//! The project page (`GET /ui`): activity by day, the recent sessions as a timeline (agent,
//! task, status, summary, files, child sessions), the open todos of the latest sessions,
//! the decisions in force and the beliefs waiting for approval.

use std::sync::Arc;

use maud::{html, Markup};
use poem::web::Data;
use poem::{handler, IntoResponse};

use super::guard::Viewer;
use super::layout::{self, badge, file_link, none, session_link, subject_link, time, Nav};
use super::{plot, Page};
use crate::graph::{beliefs, decisions::DecisionView, now_ms, sessions};
use crate::recall::{handover, reconstruction};
use crate::state::AppState;

/// Days the activity plot spans.
pub const ACTIVITY_DAYS: i64 = 30;
/// Sessions on the timeline.
pub const TIMELINE: i64 = 15;
/// Latest sessions whose open todos are listed.
pub const TODO_SESSIONS: usize = 5;
const DAY_MS: i64 = 86_400_000;

/// `GET /ui`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer) -> Page {
    let store = &state.store;
    let project = viewer.project.as_str();
    let today = now_ms() / DAY_MS;
    let since = (today - ACTIVITY_DAYS + 1) * DAY_MS;
    let (activity, timeline, standing, proposed) = tokio::try_join!(
        Box::pin(sessions::activity(store, project, since)),
        Box::pin(sessions::timeline(
            store,
            project,
            TIMELINE,
            8,
            reconstruction::CHILDREN as i64
        )),
        Box::pin(handover::decisions_in_force(store, project, 10)),
        Box::pin(beliefs::list(
            store,
            project,
            Some("proposed"),
            state.settings.belief_half_life_ms(),
            20
        )),
    )
    .map_err(|e| super::failure(e.into()))?;
    let todo_lists = futures::future::try_join_all(
        timeline
            .iter()
            .take(TODO_SESSIONS)
            .map(|s| reconstruction::unfinished(store, project, &s.id)),
    )
    .await
    .map_err(|e| super::failure(e.into()))?;
    let todos: Vec<(&str, reconstruction::Unfinished)> = timeline
        .iter()
        .zip(todo_lists)
        .flat_map(|(s, items)| items.into_iter().map(move |u| (s.id.as_str(), u)))
        .collect();
    let body = render(&activity, today, &timeline, &todos, &standing, &proposed);
    Ok(layout::page(&viewer, Nav::Project, "Project", body).into_response())
}

/// "subject: choice (over …)" with links to the subject's history.
pub fn decision_line(d: &DecisionView) -> Markup {
    html! {
        (subject_link(&d.subject)) ": " strong { (d.choice) }
        @if !d.alternatives.is_empty() {
            " " span.muted { "over " (d.alternatives.join(", ")) }
        }
    }
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(
    activity: &[sessions::ActiveDay],
    today: i64,
    timeline: &[sessions::TimelineEntry],
    todos: &[(&str, reconstruction::Unfinished)],
    standing: &[DecisionView],
    proposed: &[beliefs::BeliefView],
) -> Markup {
    html! {
        section aria-labelledby="activity" {
            h2 #activity { "Activity" }
            (plot::activity(activity, today, ACTIVITY_DAYS))
        }
        div.columns {
            section aria-labelledby="timeline" {
                h2 #timeline { "Recent sessions" }
                @if timeline.is_empty() { (none("No sessions yet.")) }
                ol.timeline {
                    @for s in timeline {
                        li {
                            div.when { (time(s.last_activity_at)) }
                            div.what {
                                p.head {
                                    (session_link(&s.id)) " " (badge(&s.status))
                                    " " span.agent { (s.agent.as_deref().unwrap_or("agent")) }
                                    " · " (s.operations) @if s.operations == 1 { " operation" } @else { " operations" }
                                }
                                @if let Some(task) = &s.task { p.task { (task) } }
                                @if let Some(summary) = &s.summary { p.summary { (summary) } }
                                @if !s.files.is_empty() {
                                    ul.files aria-label="Files" {
                                        @for f in &s.files { li { (file_link(f)) } }
                                    }
                                }
                                @if !s.children.is_empty() {
                                    ul.children aria-label="Child sessions" {
                                        @for c in &s.children {
                                            li { "↳ " (layout::child(c)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            div {
                section aria-labelledby="todos" {
                    h2 #todos { "Open todos" }
                    @if todos.is_empty() { (none("Nothing left open in the latest sessions.")) }
                    ul.plain {
                        @for (sid, u) in todos {
                            li {
                                (badge(u.status.as_deref().unwrap_or(&u.source))) " " (u.content)
                                " " span.from { "(" (session_link(sid)) ")" }
                            }
                        }
                    }
                }
                section aria-labelledby="in-force" {
                    h2 #in-force { "Decisions in force" }
                    @if standing.is_empty() { (none("No decisions recorded.")) }
                    ul.plain { @for d in standing { li { (decision_line(d)) } } }
                }
                section aria-labelledby="proposed" {
                    h2 #proposed { "Beliefs waiting for approval" }
                    @if proposed.is_empty() { (none("None waiting.")) }
                    ul.plain {
                        @for b in proposed {
                            li {
                                (layout::belief_link(&b.id, &b.content))
                                " " span.muted { (layout::percent(b.conviction)) }
                            }
                        }
                    }
                }
            }
        }
    }
}
