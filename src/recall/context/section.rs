//! The five sections of a context, one [`SectionKind`] each, and how a listed section (files,
//! decisions, beliefs, memories) takes its share: its candidate lines in offer order and the
//! rule it picks by ([`Pick`]), fitted into what it was granted ([`Fitted`]), reported as a
//! public [`Section`]. Pure; the history section fits itself in `fit`.

use poem_openapi::Object;
use serde::Serialize;

use crate::domain::budget::{self, Allocation};

use super::line::Line;

/// One section of the assembled text.
#[derive(Clone, Debug, Serialize, Object)]
pub struct Section {
    /// `history`, `files`, `decisions`, `beliefs` or `memories`.
    pub name: String,
    /// Tokens the section was granted by the allocation.
    pub share_tokens: u64,
    /// Tokens its items were estimated at (stored counts plus framing).
    pub tokens: u64,
    pub items: u64,
    /// Candidates left out.
    pub omitted: u64,
}

/// A section of the context, in the order they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SectionKind {
    History,
    Files,
    Decisions,
    Beliefs,
    Memories,
}

impl SectionKind {
    /// Its name in the answer's `sections` (and in "… not listed" warnings).
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::History => "history",
            SectionKind::Files => "files",
            SectionKind::Decisions => "decisions",
            SectionKind::Beliefs => "beliefs",
            SectionKind::Memories => "memories",
        }
    }

    /// Its heading in the text.
    pub fn heading(self) -> &'static str {
        match self {
            SectionKind::History => "## History",
            SectionKind::Files => "## Files",
            SectionKind::Decisions => "## Decisions",
            SectionKind::Beliefs => "## Beliefs",
            SectionKind::Memories => "## Memories",
        }
    }

    /// Its weight in the content share: decisions, beliefs and memories split metadata's.
    pub fn weight(self, a: &Allocation) -> f64 {
        match self {
            SectionKind::History => a.history,
            SectionKind::Files => a.files,
            SectionKind::Decisions | SectionKind::Beliefs | SectionKind::Memories => {
                a.metadata / 3.0
            }
        }
    }
}

/// How a listed section takes lines within its share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pick {
    /// A contiguous run of the newest (offered newest first), shown oldest first.
    NewestRun,
    /// In rank order while they fit, skipping one that does not for a smaller one further
    /// down; shown in rank order.
    Ranked,
}

/// A listed section's candidates: lines in offer order, as many as may be taken (a newest
/// run is tokenised no further than the content share), out of `candidates`.
pub(super) struct Listed {
    pub kind: SectionKind,
    pub lines: Vec<Line>,
    pub candidates: usize,
    pub pick: Pick,
}

impl Listed {
    /// Tokens all its lines cost.
    pub fn demand(&self) -> usize {
        self.lines.iter().map(|l| l.cost).sum()
    }

    /// The lines taken within `share`, in the order they are shown.
    pub fn fit(&self, share: usize) -> Fitted {
        let costs: Vec<usize> = self.lines.iter().map(|l| l.cost).collect();
        let taken: Vec<usize> = match self.pick {
            Pick::NewestRun => (0..budget::take_newest(&costs, share)).rev().collect(),
            Pick::Ranked => budget::take_ranked(&costs, share),
        };
        Fitted {
            kind: self.kind,
            share,
            tokens: taken.iter().map(|&i| costs[i]).sum(),
            items: taken.len(),
            omitted: self.candidates - taken.len(),
            lines: taken.iter().map(|&i| self.lines[i].text.clone()).collect(),
        }
    }
}

/// A section as it went into the text.
pub(super) struct Fitted {
    pub kind: SectionKind,
    /// Tokens granted.
    pub share: usize,
    /// Tokens its lines were estimated at.
    pub tokens: usize,
    pub items: usize,
    /// Candidates left out.
    pub omitted: usize,
    /// Its lines, in the order shown.
    pub lines: Vec<String>,
}

impl Fitted {
    pub fn section(&self) -> Section {
        Section {
            name: self.kind.name().to_string(),
            share_tokens: self.share as u64,
            tokens: self.tokens as u64,
            items: self.items as u64,
            omitted: self.omitted as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(pick: Pick, costs: &[usize], candidates: usize) -> Listed {
        Listed {
            kind: SectionKind::Files,
            lines: costs
                .iter()
                .enumerate()
                .map(|(i, &cost)| Line {
                    text: format!("l{i}"),
                    cost,
                })
                .collect(),
            candidates,
            pick,
        }
    }

    #[test]
    fn a_newest_run_stops_at_the_first_misfit_and_shows_oldest_first() {
        let l = listed(Pick::NewestRun, &[3, 3, 5, 1], 6);
        assert_eq!(l.demand(), 12);
        let f = l.fit(7);
        assert_eq!(f.lines, ["l1", "l0"]);
        assert_eq!((f.tokens, f.items, f.omitted, f.share), (6, 2, 4, 7));
        let s = f.section();
        assert_eq!((s.name.as_str(), s.items, s.omitted), ("files", 2, 4));
    }

    #[test]
    fn a_ranked_section_skips_what_does_not_fit_and_keeps_rank_order() {
        let f = listed(Pick::Ranked, &[3, 5, 1], 3).fit(4);
        assert_eq!(f.lines, ["l0", "l2"]);
        assert_eq!((f.tokens, f.items, f.omitted), (4, 2, 1));
    }

    #[test]
    fn metadata_is_split_in_three() {
        let a = Allocation::default();
        assert_eq!(SectionKind::History.weight(&a), a.history);
        assert_eq!(SectionKind::Files.weight(&a), a.files);
        assert_eq!(SectionKind::Beliefs.weight(&a), a.metadata / 3.0);
        assert_eq!(SectionKind::Memories.heading(), "## Memories");
    }
}
