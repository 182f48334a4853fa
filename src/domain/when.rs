//! The time a query asks about: "on 13 March, 2023", "March 13th 2023", "2023-03-13", "in May
//! 2023", and counted back from now "yesterday", "3 days ago", "two months ago", "last week",
//! "last month", "the past two weeks", "last weekend", "on Monday", "on 3 March", "in June"
//! (the latest such day or month). Recall ranks what happened then higher, and
//! searches the query's other words, since the words of a dated day say when, not what (the
//! words of a time counted back stay: a turn says "yesterday" or "Monday" too). Days are UTC
//! days widened by half a day on each side, so an asker in any time zone still lands on the
//! day they mean. A time counted back is read only when no dated one is named (beside a date
//! it counts from that date). "Since" a date asks about that date until today; a
//! query naming several dates, about the span from the first to the last. Pure.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, Utc};
use regex::{Captures, Regex};

const DAY_MS: i64 = 86_400_000;
/// How far a day reaches past its UTC midnight on each side.
const SLACK_MS: i64 = DAY_MS / 2;

/// A span of time a query asks about, in epoch milliseconds: `from` inclusive, `to` exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub from_ms: i64,
    pub to_ms: i64,
}

impl Asked {
    /// Whether `at_ms` falls within the span.
    pub fn holds(&self, at_ms: i64) -> bool {
        (self.from_ms..self.to_ms).contains(&at_ms)
    }

    /// The UTC days `first..=last`, widened by half a day on each side.
    fn days(first: NaiveDate, last: NaiveDate) -> Self {
        let midnight = |d: NaiveDate| {
            d.and_hms_opt(0, 0, 0)
                .map(|t| t.and_utc().timestamp_millis())
        };
        let from = midnight(first).unwrap_or(0);
        let to = midnight(last).unwrap_or(from) + DAY_MS;
        Asked {
            from_ms: from - SLACK_MS,
            to_ms: to + SLACK_MS,
        }
    }

    fn union(self, other: Asked) -> Asked {
        Asked {
            from_ms: self.from_ms.min(other.from_ms),
            to_ms: self.to_ms.max(other.to_ms),
        }
    }
}

/// What a query says about time: the span it asks about, and its text without the words
/// that named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub asked: Asked,
    pub rest: String,
}

const MONTH: &str = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?";
const FULL_MONTH: &str =
    r"(january|february|march|april|may|june|july|august|september|october|november|december)";
const ORDINAL: &str = r"(?:st|nd|rd|th)?";
const COUNT: &str =
    r"(\d{1,3}|an?|a\s+couple\s+of|couple\s+of|one|two|three|four|five|six|seven|eight|nine|ten)";

fn pattern(p: &str) -> Regex {
    Regex::new(&format!("(?i){p}")).expect("a valid pattern")
}

/// "13 March, 2023", "13th of March 2023".
static DAY_MONTH_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"\b(\d{{1,2}}){ORDINAL}\s+(?:of\s+)?{MONTH},?\s+(\d{{4}})\b"
    ))
});
/// "March 13, 2023", "Mar 13th 2023".
static MONTH_DAY_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"\b{MONTH}\s+(\d{{1,2}}){ORDINAL},?\s+(\d{{4}})\b"
    ))
});
/// "2023-03-13".
static ISO_DAY: LazyLock<Regex> = LazyLock::new(|| pattern(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"));
/// "May 2023", "May, 2023".
static MONTH_YEAR: LazyLock<Regex> =
    LazyLock::new(|| pattern(&format!(r"\b{MONTH},?\s+(\d{{4}})\b")));
/// "today", "yesterday", "3 days ago", "two weeks ago", "a month ago", "last week", "this
/// week", "last month", "the past two weeks", "last weekend".
static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"\b(?:(today)|(yesterday)|{COUNT}\s+(days?|weeks?|months?)\s+ago|(last|this|past)\s+(week|month|weekend)|(?:last|past)\s+{COUNT}\s+(days|weeks|months))\b"
    ))
});
/// A month without a year after "in" or "during", by its whole name: "in June", "during
/// March" ("in dec", "in oct" say how a number is written).
static IN_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"\b(?:in|during)\s+(?:early\s+|late\s+|mid-?\s*)?{FULL_MONTH}(?:\s+and\s+{FULL_MONTH})?\b"
    ))
});

/// "on Monday", "last Friday".
static WEEKDAY: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"));
/// A day without its year: "13 March", "March 13th".
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"\b(?:(\d{{1,2}}){ORDINAL}\s+(?:of\s+)?{MONTH}|{MONTH}\s+(\d{{1,2}}){ORDINAL})\b"
    ))
});

/// The word that opens a span at the date after it. Not "after": "the Saturday after 28
/// October" names one day.
static SINCE: LazyLock<Regex> = LazyLock::new(|| pattern(r"\bsince\s+(?:on\s+|in\s+)?$"));
/// A year right after a day ("…, 2023").
static YEAR_NEXT: LazyLock<Regex> = LazyLock::new(|| pattern(r"^,?\s*\d{4}\b"));

/// The latest day before `today` that is the weekday named.
fn last_weekday(name: &str, today: NaiveDate) -> Option<NaiveDate> {
    let names = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let want = names.iter().position(|n| name.eq_ignore_ascii_case(n))? as i64;
    let now = today.weekday().num_days_from_monday() as i64;
    let back = (now - want).rem_euclid(7);
    today.checked_sub_days(Days::new(if back == 0 { 7 } else { back } as u64))
}

/// The latest day named by month and day that is not after `today` (this year's, else last
/// year's).
fn last_day_of_month(month: u32, day: u32, today: NaiveDate) -> Option<NaiveDate> {
    let this = NaiveDate::from_ymd_opt(today.year(), month, day);
    match this {
        Some(d) if d <= today => Some(d),
        _ => NaiveDate::from_ymd_opt(today.year() - 1, month, day),
    }
}

/// The span a phrase counted back from `today` names — "yesterday", "last week", "on
/// Monday", "on 3 March" — the first one the text holds.
fn counted_back(text: &str, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    if let Some(span) = RELATIVE.captures(text).and_then(|c| relative(&c, today)) {
        return Some(span);
    }
    // Groups: day and month of "13 March", then month and day of "March 13".
    if let Some(c) = first_without_year(&DAY_MONTH, text) {
        let (day, month) = match (c.get(1), c.get(4)) {
            (Some(day), _) => (day, c.get(2)?),
            (None, Some(day)) => (day, c.get(3)?),
            _ => return None,
        };
        let (day, month) = (day.as_str().parse().ok()?, month_number(month.as_str())?);
        return last_day_of_month(month, day, today).map(|d| (d, d));
    }
    // "In June", "in January and March": the latest such months, up to today; before a
    // weekday, which it bounds ("the first Saturday in June").
    if let Some(c) = first_without_year(&IN_MONTH, text) {
        let named = |i: usize| c.get(i).and_then(|m| month_number(m.as_str()));
        let last = last_month_named(named(2).or(named(1))?, today)?;
        // The first month named: the latest such one that began by the last one.
        let first = match named(2) {
            Some(_) => last_month_named(named(1)?, last.0)?,
            None => last,
        };
        return Some((first.0, last.1));
    }
    WEEKDAY
        .captures(text)
        .and_then(|c| last_weekday(&c[1], today))
        .map(|d| (d, d))
}

/// The first match of `re` in `text` that no year follows: one that a year follows was read
/// as a dated day or month already, or names none at all ("13 March 1900").
fn first_without_year<'t>(re: &Regex, text: &'t str) -> Option<Captures<'t>> {
    re.captures_iter(text)
        .find(|c| !YEAR_NEXT.is_match(&text[c.get(0).map_or(0, |m| m.end())..]))
}

/// The first and last day of the latest month `month` that began on or before `today`
/// (this year's, else last year's).
fn last_month_named(month: u32, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let year = if month <= today.month() {
        today.year()
    } else {
        today.year() - 1
    };
    month_span(u32::try_from(year).ok()?, month)
}

fn month_number(name: &str) -> Option<u32> {
    let n = name.to_ascii_lowercase();
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    months
        .iter()
        .position(|m| n.starts_with(m))
        .map(|i| i as u32 + 1)
}

fn number(c: &Captures<'_>, i: usize) -> Option<u32> {
    c.get(i)?.as_str().parse().ok()
}

fn count(word: &str) -> Option<u64> {
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let word = word.split_whitespace().collect::<Vec<_>>().join(" ");
    match word.to_ascii_lowercase().as_str() {
        "a" | "an" => Some(1),
        "a couple of" | "couple of" => Some(2),
        w => w
            .parse()
            .ok()
            .or_else(|| words.iter().position(|x| *x == w).map(|i| i as u64)),
    }
}

/// A date from year, month and day, when it is one (years 1970 to 9999).
fn date(year: u32, month: u32, day: u32) -> Option<NaiveDate> {
    if !(1970..=9999).contains(&year) {
        return None;
    }
    NaiveDate::from_ymd_opt(year as i32, month, day)
}

/// The first and last day of a month.
fn month_span(year: u32, month: u32) -> Option<(NaiveDate, NaiveDate)> {
    let first = date(year, month, 1)?;
    let last = first.checked_add_months(Months::new(1))?.pred_opt()?;
    Some((first, last))
}

/// The span a relative phrase names, counted back from `today`.
fn relative(c: &Captures<'_>, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let back = |days: u64| today.checked_sub_days(Days::new(days));
    if c.get(1).is_some() {
        return Some((today, today));
    }
    if c.get(2).is_some() {
        let d = back(1)?;
        return Some((d, d));
    }
    if let (Some(n), Some(unit)) = (c.get(3), c.get(4)) {
        let n = count(n.as_str())?.min(3_650);
        let unit = unit.as_str().to_ascii_lowercase();
        if unit.starts_with("week") {
            // "Two weeks ago" is about a week, give or take half of one.
            let mid = back(7 * n)?;
            return Some((
                mid.checked_sub_days(Days::new(3))?,
                mid.checked_add_days(Days::new(3))?,
            ));
        }
        if unit.starts_with("month") {
            // "Two months ago" is about a month, give or take half of one.
            let mid = today.checked_sub_months(Months::new(u32::try_from(n).ok()?))?;
            return Some((
                mid.checked_sub_days(Days::new(15))?,
                mid.checked_add_days(Days::new(15))?,
            ));
        }
        let d = back(n)?;
        return Some((d, d));
    }
    // "The past two weeks", "the last 3 days": from that long ago until today.
    if let (Some(n), Some(unit)) = (c.get(7), c.get(8)) {
        let n = u32::try_from(count(n.as_str())?.min(3_650)).ok()?;
        let first = match unit.as_str().to_ascii_lowercase().as_str() {
            "months" => today.checked_sub_months(Months::new(n))?,
            "weeks" => back(7 * u64::from(n))?,
            _ => back(u64::from(n))?,
        };
        return Some((first, today));
    }
    let (which, unit) = (
        c.get(5)?.as_str().to_ascii_lowercase(),
        c.get(6)?.as_str().to_ascii_lowercase(),
    );
    match (which.as_str(), unit.as_str()) {
        // The Saturday and Sunday before today; "this weekend" on a weekend: the one it is in.
        (which, "weekend") => match today.weekday() {
            chrono::Weekday::Sat if which == "this" => Some((today, today)),
            chrono::Weekday::Sun if which == "this" => Some((today.pred_opt()?, today)),
            _ => {
                let sunday = last_weekday("sunday", today)?;
                Some((sunday.pred_opt()?, sunday))
            }
        },
        ("last", "month") => {
            let this = today.with_day(1)?;
            let first = this.checked_sub_months(Months::new(1))?;
            Some((first, this.pred_opt()?))
        }
        (_, "month") => Some((back(30)?, today)),
        ("this", _) => Some((back(6)?, today)),
        // "Last week", "the past week": the seven days before today, and today.
        _ => Some((back(7)?, today)),
    }
}

/// Reads the day a pattern's captures name.
type DayOf = fn(&Captures<'_>) -> Option<NaiveDate>;

/// The time `text` asks about, relative phrases counted back from `now_ms`; `None` when it
/// names none.
pub fn read(text: &str, now_ms: i64) -> Option<Read> {
    let today = DateTime::<Utc>::from_timestamp_millis(now_ms)?.date_naive();
    let mut spans: Vec<Asked> = Vec::new();
    let mut rest = text.to_string();
    let mut take = |span: Option<(NaiveDate, NaiveDate)>| {
        span.map(|(first, last)| spans.push(Asked::days(first, last)))
            .is_some()
    };
    // Days first, so a day's month and year are not read again as a whole month.
    let day_patterns: [(&LazyLock<Regex>, DayOf); 3] = [
        (&DAY_MONTH_YEAR, |c| {
            date(
                number(c, 3)?,
                month_number(c.get(2)?.as_str())?,
                number(c, 1)?,
            )
        }),
        (&MONTH_DAY_YEAR, |c| {
            date(
                number(c, 3)?,
                month_number(c.get(1)?.as_str())?,
                number(c, 2)?,
            )
        }),
        (&ISO_DAY, |c| {
            date(number(c, 1)?, number(c, 2)?, number(c, 3)?)
        }),
    ];
    // "Since 3 March 2025", "since May 2023": from then until today.
    let onward = |hay: &str, c: &Captures<'_>, span: Option<(NaiveDate, NaiveDate)>| {
        let start = c.get(0).map_or(0, |m| m.start());
        let open = SINCE.is_match(&hay[..start]);
        span.map(|(first, last)| (first, if open { last.max(today) } else { last }))
    };
    for (re, day) in day_patterns {
        let hay = rest.clone();
        rest = re
            .replace_all(&hay, |c: &Captures<'_>| {
                if take(onward(&hay, c, day(c).map(|d| (d, d)))) {
                    " ".to_string()
                } else {
                    c[0].to_string()
                }
            })
            .into_owned();
    }
    let hay = rest.clone();
    rest = MONTH_YEAR
        .replace_all(&hay, |c: &Captures<'_>| {
            let span = month_number(&c[1])
                .zip(number(c, 2))
                .and_then(|(m, y)| month_span(y, m));
            if take(onward(&hay, c, span)) {
                " ".to_string()
            } else {
                c[0].to_string()
            }
        })
        .into_owned();
    // A relative phrase beside a date counts from that date ("the last week of August 2023",
    // "last week, as said on 6 November 2023"), not from now: then it is not read. Its words
    // stay searched either way ("yesterday" is how a turn says it, too).
    if spans.is_empty() {
        if let Some((first, last)) = counted_back(&rest, today) {
            spans.push(Asked::days(first, last));
        }
    }
    let asked = spans.into_iter().reduce(Asked::union)?;
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(Read { asked, rest })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-25 10:00 UTC.
    const NOW: i64 = 1_795_600_800_000;

    fn day(y: i32, m: u32, d: u32) -> Asked {
        let nd = NaiveDate::from_ymd_opt(y, m, d).unwrap();
        Asked::days(nd, nd)
    }

    fn at(y: i32, m: u32, d: u32, h: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp_millis()
    }

    #[test]
    fn now_is_the_moment_the_tests_count_back_from() {
        assert_eq!(NOW, at(2026, 11, 25, 10));
    }

    #[test]
    fn days_in_every_common_spelling_are_read_and_left_out_of_the_words() {
        for q in [
            "What did Jolene ask Deb to help with on 13 March, 2023?",
            "What did Jolene ask Deb to help with on 13th of March 2023?",
            "What did Jolene ask Deb to help with on March 13, 2023?",
            "What did Jolene ask Deb to help with on Mar. 13th 2023?",
            "What did Jolene ask Deb to help with on 2023-03-13?",
        ] {
            let r = read(q, NOW).unwrap_or_else(|| panic!("{q}: a day"));
            assert_eq!(r.asked, day(2023, 3, 13), "{q}");
            assert_eq!(r.rest, "What did Jolene ask Deb to help with on ?", "{q}");
        }
    }

    #[test]
    fn a_day_reaches_half_a_day_past_each_midnight() {
        let a = read("on 13 March 2023", NOW).unwrap().asked;
        assert!(a.holds(at(2023, 3, 13, 0)) && a.holds(at(2023, 3, 13, 23)));
        assert!(a.holds(at(2023, 3, 12, 13)) && a.holds(at(2023, 3, 14, 11)));
        assert!(!a.holds(at(2023, 3, 12, 11)) && !a.holds(at(2023, 3, 14, 13)));
    }

    #[test]
    fn a_month_is_the_whole_month() {
        let r = read("Where did Nate travel in May 2023?", NOW).unwrap();
        let may = Asked::days(
            NaiveDate::from_ymd_opt(2023, 5, 1).unwrap(),
            NaiveDate::from_ymd_opt(2023, 5, 31).unwrap(),
        );
        assert_eq!(r.asked, may);
        assert_eq!(r.rest, "Where did Nate travel in ?");
        assert_eq!(
            read("in Feb, 2024", NOW).unwrap().asked.to_ms,
            at(2024, 3, 1, 12)
        );
    }

    /// Each query reads as the day beside it.
    fn days_read(cases: &[(&str, Asked)]) {
        for (q, want) in cases {
            let got = read(q, NOW).map(|r| r.asked);
            assert_eq!(got, Some(*want), "{q}");
        }
    }

    #[test]
    fn relative_times_count_back_from_now() {
        days_read(&[
            ("what did we do today", day(2026, 11, 25)),
            (
                "what did we decide yesterday about the cache",
                day(2026, 11, 24),
            ),
            ("the bug from 3 days ago", day(2026, 11, 22)),
            ("the bug from three days ago", day(2026, 11, 22)),
        ]);
        let r = read("what did we decide yesterday about the cache", NOW).unwrap();
        assert_eq!(r.rest, "what did we decide yesterday about the cache");
        let last_week = read("the refactor last week", NOW).unwrap().asked;
        assert!(last_week.holds(at(2026, 11, 18, 9)) && last_week.holds(at(2026, 11, 25, 9)));
        assert!(!last_week.holds(at(2026, 11, 17, 9)));
        let last_month = read("what broke last month", NOW).unwrap().asked;
        assert!(last_month.holds(at(2026, 10, 1, 0)) && last_month.holds(at(2026, 10, 31, 23)));
        assert!(!last_month.holds(at(2026, 11, 2, 0)) && !last_month.holds(at(2026, 9, 29, 0)));
        let weeks = read("two weeks ago", NOW).unwrap().asked;
        assert!(weeks.holds(at(2026, 11, 11, 9)) && !weeks.holds(at(2026, 11, 20, 9)));
    }

    #[test]
    fn weekdays_and_days_without_a_year_are_the_latest_such_day() {
        // 2026-11-25 is a Wednesday.
        days_read(&[
            ("what did we ship on Monday", day(2026, 11, 23)),
            ("last friday's outage", day(2026, 11, 20)),
            ("on Wednesday", day(2026, 11, 18)),
            ("the deploy on 3 March", day(2026, 3, 3)),
            ("the deploy on March 3rd", day(2026, 3, 3)),
            ("the deploy on 24 December", day(2025, 12, 24)),
        ]);
        let r = read("what did we ship on Monday", NOW).unwrap();
        assert_eq!(
            r.rest, "what did we ship on Monday",
            "its words stay searched"
        );
    }

    #[test]
    fn months_ago_the_past_weeks_weekends_and_months_without_a_year() {
        // 2026-11-25 is a Wednesday.
        let spans = |q: &str| read(q, NOW).unwrap_or_else(|| panic!("{q}: a time")).asked;
        let weekend = spans("What type of cocktail recipe did I try last weekend?");
        assert_eq!(weekend.from_ms, at(2026, 11, 21, 0) - SLACK_MS);
        assert_eq!(weekend.to_ms, at(2026, 11, 23, 0) + SLACK_MS);
        let month = spans("What charity event did I participate in a month ago?");
        assert!(month.holds(at(2026, 10, 12, 9)) && month.holds(at(2026, 11, 8, 9)));
        assert!(!month.holds(at(2026, 11, 12, 9)) && !month.holds(at(2026, 10, 8, 9)));
        let two = spans("What did I do with Rachel on the Wednesday two months ago?");
        assert!(two.holds(at(2026, 9, 25, 9)) && !two.holds(at(2026, 10, 20, 9)));
        let past = spans("How many times did I bake something in the past two weeks?");
        assert_eq!(past.from_ms, at(2026, 11, 11, 0) - SLACK_MS);
        assert_eq!(past.to_ms, at(2026, 11, 26, 0) + SLACK_MS);
        let past = spans("the last 3 months of releases");
        assert_eq!(past.from_ms, at(2026, 8, 25, 0) - SLACK_MS);
        assert_eq!(spans("a couple of days ago"), day(2026, 11, 23));
        let june = spans("What was the date on which I attended the first BBQ event in June?");
        assert_eq!(june.from_ms, at(2026, 6, 1, 0) - SLACK_MS);
        assert_eq!(june.to_ms, at(2026, 7, 1, 0) + SLACK_MS);
        let december = spans("How many museums did I visit in December?");
        assert_eq!(
            december.from_ms,
            at(2025, 12, 1, 0) - SLACK_MS,
            "last year's"
        );
        let both = spans("the two novels I finished in January and March");
        assert_eq!(both.from_ms, at(2026, 1, 1, 0) - SLACK_MS);
        assert_eq!(both.to_ms, at(2026, 4, 1, 0) + SLACK_MS);
        let r = read("the first BBQ event in June", NOW).unwrap();
        assert_eq!(
            r.rest, "the first BBQ event in June",
            "its words stay searched"
        );
        // The later month is the latest such; the earlier, the latest before it.
        let autumn = spans("the releases in November and December");
        assert_eq!(autumn.from_ms, at(2025, 11, 1, 0) - SLACK_MS);
        assert_eq!(autumn.to_ms, at(2026, 1, 1, 0) + SLACK_MS);
        let first = spans("the first Saturday in June");
        assert!(
            first.holds(at(2026, 6, 6, 9)),
            "the month bounds the weekday"
        );
        let saturday = NOW + 3 * DAY_MS; // 2026-11-28, a Saturday.
        let this = read("what did we try this weekend", saturday)
            .unwrap()
            .asked;
        assert_eq!(this, day(2026, 11, 28));
    }

    #[test]
    fn since_a_date_runs_until_today() {
        let r = read("what changed since 3 March 2025", NOW).unwrap();
        assert_eq!(r.asked.from_ms, at(2025, 3, 3, 0) - SLACK_MS);
        assert_eq!(r.asked.to_ms, at(2026, 11, 26, 0) + SLACK_MS);
        assert_eq!(r.rest, "what changed since");
        let r = read("decisions since May 2023", NOW).unwrap();
        assert_eq!(r.asked.from_ms, at(2023, 5, 1, 0) - SLACK_MS);
        assert_eq!(r.asked.to_ms, at(2026, 11, 26, 0) + SLACK_MS);
        let r = read("plans for the Saturday after October 28, 2023", NOW).unwrap();
        assert_eq!(r.asked, day(2023, 10, 28), "one day, not a span");
        // Only right before the date.
        let r = read("since we moved, what happened on 3 March 2025", NOW).unwrap();
        assert_eq!(r.asked, day(2025, 3, 3));
    }

    #[test]
    fn several_times_ask_about_the_span_between_them() {
        let r = read("between 1 May 2023 and 3 June 2023", NOW).unwrap();
        assert!(r.asked.holds(at(2023, 5, 20, 12)));
        assert_eq!(r.asked.from_ms, at(2023, 5, 1, 0) - SLACK_MS);
        assert_eq!(r.asked.to_ms, at(2023, 6, 4, 0) + SLACK_MS);
    }

    #[test]
    fn a_relative_phrase_beside_a_date_counts_from_it_so_only_the_date_is_read() {
        let r = read("Where was Calvin in the last week of October 2023?", NOW).unwrap();
        assert_eq!(r.asked.to_ms, at(2023, 11, 1, 12));
        let r = read(
            "What did Tim fix last week, as he said on November 6, 2023?",
            NOW,
        )
        .unwrap();
        assert_eq!(r.asked, day(2023, 11, 6));
        assert_eq!(r.rest, "What did Tim fix last week, as he said on ?");
    }

    #[test]
    fn words_that_only_look_like_times_are_not_read() {
        for q in [
            "may we cache the 2023 results?",
            "what is the March of Dimes",
            "released on 13 March 1900",
            "the todays list",
            "how did we fix the lost update",
            "print the offset in dec and in oct",
        ] {
            let r = read(q, NOW);
            assert!(r.is_none(), "{q}: {r:?}");
        }
        assert!(read("2023-02-30", NOW).is_none(), "no such day");
    }
}
