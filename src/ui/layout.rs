//! The frame around every page (header with the project, navigation, the search box and
//! sign-out; a skip link; `main`), error pages, and the small pieces of markup pages share:
//! times, status badges, links to sessions, files and subjects. Values are interpolated by
//! maud, which escapes them; nothing here writes raw HTML from data.

use chrono::{DateTime, Utc};
use maud::{html, Markup, DOCTYPE};
use poem::http::StatusCode;
use poem::web::Html;

use super::guard::{Forbidden, Viewer};
use crate::recall::reconstruction::ChildSession;

/// The sections of the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Project,
    Decisions,
    Beliefs,
    Runs,
    Search,
    Other,
}

const LINKS: &[(Nav, &str, &str)] = &[
    (Nav::Project, "/ui", "Project"),
    (Nav::Decisions, "/ui/decisions", "Decisions"),
    (Nav::Beliefs, "/ui/beliefs", "Beliefs"),
    (Nav::Runs, "/ui/runs", "Extraction runs"),
];

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="referrer" content="same-origin";
            title { (title) " · cairn" }
            link rel="stylesheet" href="/ui/assets/cairn.css";
        }
    }
}

/// A page of the signed-in UI.
pub fn page(viewer: &Viewer, nav: Nav, title: &str, body: Markup) -> Html<String> {
    let search_value = "";
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                (head(title))
                body {
                    a.skip href="#main" { "Skip to content" }
                    header.top {
                        div.brand {
                            a href="/ui" { "cairn" }
                            span.project title="Project" { (viewer.project) }
                        }
                        nav aria-label="Sections" {
                            ul {
                                @for (n, href, label) in LINKS {
                                    li {
                                        @if *n == nav {
                                            a href=(href) aria-current="page" { (label) }
                                        } @else {
                                            a href=(href) { (label) }
                                        }
                                    }
                                }
                            }
                        }
                        form.search role="search" method="get" action="/ui/search" {
                            label for="q" { "Search" }
                            input #q type="search" name="q" value=(search_value) maxlength="1000"
                                placeholder="sessions and turns";
                            button type="submit" { "Search" }
                        }
                        form.signout method="post" action="/ui/signout" {
                            input type="hidden" name="csrf" value=(viewer.csrf);
                            span.scope { (viewer.scope.as_str()) " key" }
                            button type="submit" { "Sign out" }
                        }
                    }
                    main #main tabindex="-1" {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
        .into_string(),
    )
}

/// A page outside a sign-in (the sign-in form, errors).
pub fn bare(title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                (head(title))
                body.bare {
                    main #main {
                        p.brand { a href="/ui" { "cairn" } }
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
        .into_string(),
    )
}

/// A refused action's 403 page.
impl From<Forbidden> for poem::Error {
    fn from(_: Forbidden) -> Self {
        use poem::IntoResponse as _;
        let page = error_page(
            StatusCode::FORBIDDEN,
            "This action was refused: the form was not sent from this page. Reload the page and try again.",
        );
        poem::Error::from_response((StatusCode::FORBIDDEN, page).into_response())
    }
}

/// An error page: the status and what to do.
pub fn error_page(status: StatusCode, message: &str) -> Html<String> {
    let title = status.canonical_reason().unwrap_or("Error");
    bare(
        title,
        html! {
            p.error role="alert" { (message) }
            p { a href="/ui" { "Back to the project" } }
        },
    )
}

/// Epoch milliseconds as `2026-11-24 11:07 UTC`.
pub fn time(ms: i64) -> Markup {
    let text = DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "—".into());
    let iso = DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default();
    html! { time datetime=(iso) { (text) } }
}

/// A status as a badge (its class follows the status, for colour; the text says it).
pub fn badge(status: &str) -> Markup {
    let class = match status {
        "active" | "completed" | "closed" | "in force" => "badge ok",
        "proposed" | "running" | "in_progress" | "pending" => "badge wait",
        "rejected" | "abandoned" | "failed" | "completed_with_errors" => "badge bad",
        _ => "badge",
    };
    html! { span class=(class) { (status) } }
}

/// Percent-encodes `s` for a query value or a path segment.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A link to a session's page.
pub fn session_link(id: &str) -> Markup {
    html! { a.mono href={ "/ui/sessions/" (encode(id)) } { (short(id)) } }
}

/// A link to a session's page at one operation.
pub fn operation_link(session_id: &str, seq: i64) -> Markup {
    html! {
        a.mono href={ "/ui/sessions/" (encode(session_id)) "#op-" (seq) } {
            (short(session_id)) " #" (seq)
        }
    }
}

/// A link to what is known about a file.
pub fn file_link(path: &str) -> Markup {
    html! { a.mono href={ "/ui/file?path=" (encode(path)) } { (path) } }
}

/// A link to a belief's page.
pub fn belief_link(id: &str, content: &str) -> Markup {
    html! { a href={ "/ui/beliefs/" (encode(id)) } { (content) } }
}

/// A child session in one line: its link, its agent, its status, its task.
pub fn child(c: &ChildSession) -> Markup {
    html! {
        (session_link(&c.id)) " " (c.agent_type.as_deref().unwrap_or("subagent")) " "
        (badge(c.status.as_deref().unwrap_or("unknown")))
        @if let Some(t) = &c.task { " — " (t) }
    }
}

/// A link to a subject's decision history.
pub fn subject_link(subject: &str) -> Markup {
    html! { a href={ "/ui/decisions?subject=" (encode(subject)) } { (subject) } }
}

/// Long ids cut for display (the full id stays in the link and its title).
pub fn short(id: &str) -> String {
    if id.chars().count() > 18 {
        let head: String = id.chars().take(16).collect();
        format!("{head}…")
    } else {
        id.to_string()
    }
}

/// A paragraph for an empty list.
pub fn none(text: &str) -> Markup {
    html! { p.none { (text) } }
}

/// A conviction 0..1 as a percentage.
pub fn percent(x: f64) -> String {
    format!("{:.0} %", (x * 100.0).clamp(0.0, 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_encode_and_markup_escapes() {
        assert_eq!(encode("a b/<c>&"), "a%20b%2F%3Cc%3E%26");
        let html = file_link("<script>alert(1)</script>").into_string();
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<script>"));
        assert_eq!(short("0123456789abcdefghij"), "0123456789abcdef…");
    }
}
