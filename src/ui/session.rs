//! The session page (`GET /ui/sessions/{id}`): the reconstruction the API returns (narrative,
//! operations in order with their types and files, decisions with rationale and rejected
//! alternatives, beliefs informed, unfinished work, child sessions), with the operations'
//! triggered-by links and the sessions before and after it.

use std::collections::HashMap;
use std::sync::Arc;

use maud::{html, Markup};
use poem::web::{Data, Path};
use poem::{handler, IntoResponse};

use super::guard::Viewer;
use super::layout::{self, badge, file_link, none, operation_link, session_link, time, Nav};
use super::Page;
use crate::graph::sessions;
use crate::recall::{self, reconstruction};
use crate::request::SessionId;
use crate::state::AppState;

/// `GET /ui/sessions/{id}`.
#[handler]
pub async fn page(state: Data<&Arc<AppState>>, viewer: Viewer, Path(id): Path<String>) -> Page {
    let id = SessionId::parse("id", &id).map_err(super::failure)?;
    let project = viewer.project.as_str();
    let head = recall::session(&state.store, project, &id)
        .await
        .map_err(super::failure)?;
    // What `GET /v1/sessions/{id}/reconstruction` returns by default.
    let filter = crate::request::reconstruction(None, None, None, None).map_err(super::failure)?;
    // Boxed: the reconstruction's future is large, and debug builds poll on small stacks.
    let (rec, links) = tokio::join!(
        Box::pin(reconstruction::reconstruct(
            &state.store,
            &state.logs,
            project,
            head.clone(),
            filter
        )),
        Box::pin(sessions::links(&state.store, project, &id)),
    );
    let rec = rec.map_err(super::failure)?;
    let links = links.map_err(|e| super::failure(e.into()))?;
    let triggers: HashMap<i64, &sessions::Trigger> =
        links.triggers.iter().map(|t| (t.seq, t)).collect();
    let title = head
        .task
        .clone()
        .unwrap_or_else(|| format!("Session {}", layout::short(&id)));
    let body = render(&id, &head, &rec, &links, &triggers);
    Ok(layout::page(&viewer, Nav::Other, &title, body).into_response())
}

/// The page's markup (apart from the request's async work: debug builds poll handlers on
/// small stacks, and a large template must not sit in the poll frame).
fn render(
    id: &str,
    head: &crate::recall::SessionHead,
    rec: &reconstruction::Reconstruction,
    links: &sessions::SessionLinks,
    triggers: &HashMap<i64, &sessions::Trigger>,
) -> Markup {
    html! {
        dl.meta {
            dt { "Session" } dd.mono { (id) }
            dt { "Status" } dd { (badge(&rec.status)) }
            dt { "Agent" } dd { (head.agent.as_deref().unwrap_or("—")) }
            dt { "Started" } dd { (time(head.started_at)) }
            dt { "Last active" } dd { (time(head.last_activity_at)) }
            dt { "Operations" } dd { (rec.operations_total) }
            @if let Some(prev) = &head.continues {
                dt { "Continues" } dd { (session_link(prev)) }
            }
            @if !links.continued_by.is_empty() {
                dt { "Continued by" }
                dd { @for (i, next) in links.continued_by.iter().enumerate() {
                    @if i > 0 { ", " } (session_link(next))
                } }
            }
            @if let Some(parent) = &links.parent {
                dt { "Launched by" } dd { (session_link(parent)) }
            }
        }
        section aria-labelledby="narrative" {
            h2 #narrative { "What happened" }
            p.narrative { (rec.narrative) }
            @if let Some(summary) = &head.summary { p.summary { b { "Summary: " } (summary) } }
        }
        section aria-labelledby="unfinished" {
            h2 #unfinished { "Unfinished" }
            @if rec.unfinished.is_empty() { (none("Nothing left open.")) }
            ul.plain {
                @for u in &rec.unfinished {
                    li { (badge(u.status.as_deref().unwrap_or(&u.source))) " " (u.content) }
                }
            }
        }
        section aria-labelledby="decisions" {
            h2 #decisions { "Decisions" }
            @if rec.decisions.is_empty() { (none("No decisions in this session.")) }
            @for d in &rec.decisions {
                article.decision {
                    h3 { (layout::subject_link(&d.subject)) }
                    p { "Chose " strong { (d.choice) } }
                    @if !d.rationale.is_empty() { p { "Because " (d.rationale) } }
                    @if !d.alternatives.is_empty() {
                        p { "Rejected: " @for (i, a) in d.alternatives.iter().enumerate() {
                            @if i > 0 { ", " } s { (a) }
                        } }
                    }
                    @if d.superseded_by.is_some() { p { (badge("superseded")) } }
                }
            }
        }
        @if !rec.beliefs_affected.is_empty() {
            section aria-labelledby="beliefs" {
                h2 #beliefs { "Beliefs informed" }
                ul.plain {
                    @for b in &rec.beliefs_affected {
                        li {
                            (layout::belief_link(&b.id, &b.content))
                            " " (badge(&b.status))
                            " " span.muted { "+" (b.reinforced) " / −" (b.weakened) }
                        }
                    }
                }
            }
        }
        @if !rec.children.is_empty() {
            section aria-labelledby="children" {
                h2 #children { "Child sessions" }
                ul.plain {
                    @for c in &rec.children {
                        li {
                            (layout::child(c))
                            @if let Some(s) = &c.summary { p.summary { (s) } }
                        }
                    }
                }
            }
        }
        section aria-labelledby="operations" {
            h2 #operations { "Operations" }
            @if rec.operations_omitted > 0 {
                p.muted { (rec.operations_omitted) " less important operations are not shown." }
            }
            @if rec.operations.is_empty() { (none("No operations.")) }
            @else {
                table.ops {
                    thead { tr {
                        th scope="col" { "#" } th scope="col" { "Type" } th scope="col" { "What" }
                        th scope="col" { "Files" } th scope="col" { "Triggered by" } th scope="col" { "At" }
                    } }
                    tbody {
                        @for op in &rec.operations {
                            tr #{ "op-" (op.seq) } {
                                td.num { (op.seq) }
                                td { span class={ "type " (op.kind) } { (op.kind) } }
                                td {
                                    @if let Some(role) = &op.role { b { (role) ": " } }
                                    (op.summary)
                                    @if let Some(t) = &op.target { " " code { (t) } }
                                }
                                td {
                                    @for f in &op.files_modified { (file_link(f)) " ✎ " }
                                    @for f in &op.files_read { (file_link(f)) " " }
                                }
                                td {
                                    @if let Some(t) = triggers.get(&op.seq) {
                                        @match (&t.by_session, t.by_seq) {
                                            (Some(s), Some(seq)) => (operation_link(s, seq)),
                                            _ => span.mono { (layout::short(&t.by_id)) },
                                        }
                                    }
                                }
                                td.when { (time(op.at)) }
                            }
                        }
                    }
                }
            }
        }
    }
}
