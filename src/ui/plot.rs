//! Plots drawn on the server as inline SVG, with maud like the pages (so any text in them is
//! escaped): the project's activity by day, a belief's conviction over time. Colours come
//! from presentation attributes and the stylesheet (the CSP allows no inline style); each
//! plot is an image with a text alternative saying what it shows.

use chrono::{DateTime, Utc};
use maud::{html, Markup};

use crate::graph::sessions::ActiveDay;

const DAY_MS: i64 = 86_400_000;
const W: f64 = 640.0;
const H: f64 = 180.0;
const LEFT: f64 = 44.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 10.0;

fn date(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%b %d").to_string())
        .unwrap_or_default()
}

/// A moment on an axis: the day, and the time of day when the axis spans less than two days.
fn moment(ms: i64, span_ms: i64) -> String {
    let format = if span_ms < 2 * DAY_MS {
        "%b %d %H:%M"
    } else {
        "%b %d"
    };
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format(format).to_string())
        .unwrap_or_default()
}

fn fmt(x: f64) -> String {
    format!("{x:.1}")
}

/// Operations per day over the `days` days up to `today` (days since the epoch), as bars.
pub fn activity(days: &[ActiveDay], today: i64, span: i64) -> Markup {
    let first = today - span + 1;
    let by_day = |d: i64| days.iter().find(|a| a.day == d);
    let max = days.iter().map(|d| d.operations).max().unwrap_or(0).max(1);
    let (sessions, operations): (i64, i64) = days
        .iter()
        .filter(|d| d.day >= first)
        .fold((0, 0), |(s, o), d| (s + d.sessions, o + d.operations));
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let bar = plot_w / span as f64;
    let label = format!(
        "Activity over the last {span} days: {sessions} sessions, {operations} operations; at most {max} operations on one day."
    );
    html! {
        svg.plot role="img" aria-label=(label) viewBox={ "0 0 " (W) " " (H) }
            xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            line.axis x1=(LEFT) y1=(fmt(TOP + plot_h)) x2=(fmt(W - 8.0)) y2=(fmt(TOP + plot_h)) {}
            text.tick x=(fmt(LEFT - 6.0)) y=(fmt(TOP + 8.0)) text-anchor="end" { (max) }
            text.tick x=(fmt(LEFT - 6.0)) y=(fmt(TOP + plot_h)) text-anchor="end" { "0" }
            @for i in 0..span {
                @if let Some(d) = by_day(first + i) {
                    @let h = (d.operations as f64 / max as f64 * plot_h).max(2.0);
                    rect.bar x=(fmt(LEFT + i as f64 * bar + 1.0)) y=(fmt(TOP + plot_h - h))
                        width=(fmt((bar - 2.0).max(1.0))) height=(fmt(h)) {
                        title { (date((first + i) * DAY_MS)) ": " (d.sessions) " sessions, " (d.operations) " operations" }
                    }
                }
            }
            text.tick x=(LEFT) y=(fmt(H - 6.0)) { (date(first * DAY_MS)) }
            text.tick x=(fmt(W - 8.0)) y=(fmt(H - 6.0)) text-anchor="end" { (date(today * DAY_MS)) }
        }
    }
}

/// A mark on the conviction line: a piece of evidence arriving.
pub struct Mark {
    pub at: i64,
    pub supports: bool,
    pub label: String,
}

/// Conviction (0..1) over time as a line from `series` (time, conviction), with a dot where
/// each piece of evidence arrived.
pub fn conviction(series: &[(i64, f64)], marks: &[Mark]) -> Markup {
    let (from, to) = match (series.first(), series.last()) {
        (Some(a), Some(b)) => (a.0, b.0.max(a.0 + 1)),
        _ => return html! {},
    };
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let x = |t: i64| LEFT + (t - from) as f64 / (to - from) as f64 * plot_w;
    let y = |c: f64| TOP + (1.0 - c.clamp(0.0, 1.0)) * plot_h;
    let at = |t: i64| series.iter().rev().find(|p| p.0 <= t).map_or(0.5, |p| p.1);
    let points: String = series
        .iter()
        .map(|(t, c)| format!("{},{}", fmt(x(*t)), fmt(y(*c))))
        .collect::<Vec<_>>()
        .join(" ");
    let now = series.last().map_or(0.5, |p| p.1);
    let label = format!(
        "Conviction from {} to {}: now {:.0} %, {} pieces of evidence.",
        date(from),
        date(to),
        now * 100.0,
        marks.len()
    );
    html! {
        svg.plot role="img" aria-label=(label) viewBox={ "0 0 " (W) " " (H) }
            xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            @for (v, name) in [(1.0, "100 %"), (0.5, "50 %"), (0.0, "0 %")] {
                line.grid x1=(LEFT) y1=(fmt(y(v))) x2=(fmt(W - 8.0)) y2=(fmt(y(v))) {}
                text.tick x=(fmt(LEFT - 6.0)) y=(fmt(y(v) + 4.0)) text-anchor="end" { (name) }
            }
            polyline.line points=(points) fill="none" {}
            @for m in marks {
                circle class=(if m.supports { "mark supports" } else { "mark contradicts" })
                    cx=(fmt(x(m.at.clamp(from, to)))) cy=(fmt(y(at(m.at)))) r="5" {
                    title { (m.label) }
                }
            }
            text.tick x=(LEFT) y=(fmt(H - 6.0)) { (moment(from, to - from)) }
            text.tick x=(fmt(W - 8.0)) y=(fmt(H - 6.0)) text-anchor="end" { (moment(to, to - from)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_draws_a_bar_per_active_day_and_escapes_nothing_raw() {
        let days = [
            ActiveDay {
                day: 100,
                sessions: 2,
                operations: 10,
            },
            ActiveDay {
                day: 105,
                sessions: 1,
                operations: 5,
            },
        ];
        let svg = activity(&days, 105, 30).into_string();
        assert_eq!(svg.matches("<rect").count(), 2, "{svg}");
        assert!(svg.contains("3 sessions, 15 operations"));
    }

    #[test]
    fn conviction_marks_each_piece_of_evidence() {
        let series = [(0, 0.5), (10, 0.7), (20, 0.6)];
        let marks = [
            Mark {
                at: 10,
                supports: true,
                label: "<b>op</b>".into(),
            },
            Mark {
                at: 20,
                supports: false,
                label: "x".into(),
            },
        ];
        let svg = conviction(&series, &marks).into_string();
        assert!(svg.contains("<polyline"));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("&lt;b&gt;op"), "{svg}");
        assert!(svg.contains("now 60 %"));
    }
}
