//! The data sets `cairn-bench recall-quality` asks: long multi-session conversations with
//! questions whose evidence is annotated turn by turn. [`load`] reads them as they are
//! published, or in the bench's own shape:
//!
//! - the bench's shape: `{conversations: [{id, speakers, sessions: [{date, turns: [{id,
//!   speaker, text}]}], questions: [{question, evidence: [turn id], category?}]}]}`;
//! - LoCoMo's `data/locomo10.json` (snap-research/LoCoMo): a list of `{sample_id,
//!   conversation: {speaker_a, speaker_b, session_N, session_N_date_time}, qa}`. A turn that
//!   shares an image keeps its caption (`… [shares an image: <blip_caption>]`); evidence
//!   strings naming several turns ("D8:6; D9:17") are split, and ids naming no turn dropped;
//! - LongMemEval's files (Wu et al., ICLR 2025): a list of instances, one instance, or a
//!   folder of one-instance files. Each instance is one conversation: its
//!   `haystack_sessions` dated by `haystack_dates`, turns `<session id>:<index>` spoken by
//!   their `role` ("user" opens it; a session given twice has its second copy as `<id>#2`),
//!   the turns marked `has_answer` the evidence of its one
//!   question, `question_type` its category. Instances without such a turn (abstention) are
//!   left out: they have no evidence to recall;
//! - REALTALK's chats (Lee et al., 2025; danny911kr/REALTALK `data/Chat_*.json`), a file or a
//!   folder of them: one conversation a file, named by the file, laid out as LoCoMo's
//!   (`session_N`, `session_N_date_time`, `qa`) with each message dated (`date_time`), an
//!   image shared captioned as in LoCoMo, and its speakers in `name`. Evidence ranges
//!   ("D12:3-D12:5") count each of their turns.
//!
//! [`load`] refuses a conversation id, or a turn id within a conversation, given twice
//! ([`check_ids`]); the bench checks that every session's date reads ([`parse_date`],
//! [`check_dates`]) before anything is captured. Pure but for reading the files.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The LoCoMo extract shipped with the sources (the repository's `tests/fixtures`).
pub const DEFAULT_DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/locomo/locomo10.json"
);

#[derive(Debug, Deserialize, PartialEq)]
pub struct DataSet {
    pub conversations: Vec<Conversation>,
}

#[derive(Debug, Deserialize, PartialEq)]
pub struct Conversation {
    pub id: String,
    pub speakers: Vec<String>,
    pub sessions: Vec<DataSession>,
    pub questions: Vec<Question>,
}

#[derive(Debug, Deserialize, PartialEq)]
pub struct DataSession {
    /// As the data set writes it ("1:56 pm on 8 May, 2023").
    pub date: String,
    pub turns: Vec<Turn>,
}

#[derive(Debug, Deserialize, PartialEq)]
pub struct Turn {
    pub id: String,
    pub speaker: String,
    pub text: String,
    /// When it was said, when the data set says (REALTALK dates each message); absent: half
    /// a minute after the turn before it, from the session's date.
    #[serde(default)]
    pub at: Option<String>,
}

#[derive(Debug, Deserialize, PartialEq)]
pub struct Question {
    pub question: String,
    pub evidence: Vec<String>,
    /// The data set's kind of question (LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain,
    /// 4 single-hop, 5 adversarial); the report breaks recall down by it.
    #[serde(default)]
    pub category: Option<Value>,
    /// When the question was asked (LongMemEval's `question_date`; in any form
    /// [`parse_date`] reads): the times it names ("four weeks ago", "last Saturday") count
    /// back from then. Absent: it is asked now.
    #[serde(default)]
    pub date: Option<String>,
}

impl Question {
    /// When the question was asked, in epoch milliseconds (`None`: no readable date).
    pub fn asked_at(&self) -> Option<i64> {
        self.date.as_deref().and_then(parse_date)
    }

    /// The category as a report key (`none` without one).
    pub fn category_key(&self) -> String {
        match &self.category {
            None | Some(Value::Null) => "none".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        }
    }
}

/// A session's date as epoch milliseconds (UTC, when it names no offset), or `None`. Read as
/// LoCoMo writes it ("1:56 pm on 8 May, 2023"), as LongMemEval does ("2023/05/20 (Sat)
/// 02:21"), as REALTALK does ("29.12.2023, 22:42:04"), RFC 3339 ("2023-05-08T13:56:00Z"), or
/// ISO without an offset ("2023-05-08 13:56", "2023-05-08T13:56:00", "2023-05-08").
pub fn parse_date(text: &str) -> Option<i64> {
    use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    if let Some((time, date)) = text.split_once(" on ") {
        let date = NaiveDate::parse_from_str(date.trim(), "%d %B, %Y").ok()?;
        let time = NaiveTime::parse_from_str(&time.trim().to_uppercase(), "%I:%M %p").ok()?;
        return Some(date.and_time(time).and_utc().timestamp_millis());
    }
    // A weekday in brackets says nothing the date does not.
    let plain: String = match (text.find('('), text.find(')')) {
        (Some(a), Some(b)) if a < b => format!("{} {}", &text[..a], &text[b + 1..]),
        _ => text.to_string(),
    };
    let plain = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    const WITH_TIME: [&str; 6] = [
        "%Y/%m/%d %H:%M",
        "%Y/%m/%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%d.%m.%Y, %H:%M:%S",
    ];
    if let Some(t) = WITH_TIME
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&plain, f).ok())
    {
        return Some(t.and_utc().timestamp_millis());
    }
    ["%Y/%m/%d", "%Y-%m-%d"]
        .iter()
        .find_map(|f| NaiveDate::parse_from_str(&plain, f).ok())
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
}

/// Every session's date, read: a session placed at an unknown time would misplace its turns
/// in time, so an unreadable date stops the run before anything is captured.
pub fn check_dates(data: &DataSet) -> anyhow::Result<()> {
    for conv in &data.conversations {
        for (i, s) in conv.sessions.iter().enumerate() {
            anyhow::ensure!(
                parse_date(&s.date).is_some(),
                "conversation {} session {}: cannot read the date {:?}; write it as \
                 \"2023-05-08T13:56:00Z\", \"2023-05-08 13:56\", \"2023/05/08 (Mon) 13:56\" \
                 or \"1:56 pm on 8 May, 2023\"",
                conv.id,
                i + 1,
                s.date
            );
            for t in &s.turns {
                if let Some(at) = &t.at {
                    anyhow::ensure!(
                        parse_date(at).is_some(),
                        "conversation {} turn {}: cannot read the time {at:?}",
                        conv.id,
                        t.id
                    );
                }
            }
        }
        for q in &conv.questions {
            if let Some(date) = &q.date {
                anyhow::ensure!(
                    parse_date(date).is_some(),
                    "conversation {}: cannot read the date {date:?} of the question {:?}",
                    conv.id,
                    q.question
                );
            }
        }
    }
    Ok(())
}

/// Reads the data set at `path`: a file in any of the module's shapes, or a folder of
/// LongMemEval's one-instance files or REALTALK's one-chat files (empty files skipped).
pub fn load(path: &Path) -> anyhow::Result<DataSet> {
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("reading the folder {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut conversations = Vec::new();
        for file in files {
            let raw = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            if raw.trim().is_empty() {
                continue;
            }
            conversations.extend(parse(&raw, &file)?.conversations);
        }
        let data = DataSet { conversations };
        check_ids(&data)?;
        return Ok(data);
    }
    let data = read_file(path)?;
    check_ids(&data)?;
    Ok(data)
}

/// Every conversation's id told apart: each becomes a project of its own, so one given twice
/// (a question in two files of a folder) would mix two histories.
pub fn check_ids(data: &DataSet) -> anyhow::Result<()> {
    let mut seen = HashSet::new();
    for c in &data.conversations {
        anyhow::ensure!(
            seen.insert(c.id.as_str()),
            "conversation {} appears more than once; keep one copy of it (in a folder of \
             LongMemEval files, one file per question: `scripts/longmemeval-data` picks them)",
            c.id
        );
        let mut turns = HashSet::new();
        for t in c.sessions.iter().flat_map(|s| &s.turns) {
            anyhow::ensure!(
                turns.insert(t.id.as_str()),
                "conversation {}: turn id {} appears more than once; each turn is captured as \
                 an operation of that id",
                c.id,
                t.id
            );
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> anyhow::Result<DataSet> {
    let raw =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&raw, path)
}

fn parse(raw: &str, path: &Path) -> anyhow::Result<DataSet> {
    let value: Value =
        serde_json::from_str(raw).with_context(|| format!("{} is not JSON", path.display()))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    from_value(value, stem.as_deref().unwrap_or("conversation"))
        .with_context(|| format!("reading the data set {}", path.display()))
}

/// The data set `value` holds, in whichever shape it is written; `name` (the file's stem) is
/// the id of a conversation whose shape names none (REALTALK's).
pub fn from_value(value: Value, name: &str) -> anyhow::Result<DataSet> {
    let first = match &value {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    let has = |key: &str| first.and_then(|f| f.get(key)).is_some();
    anyhow::ensure!(
        first.is_some(),
        "the list holds no conversation or instance"
    );
    if value.get("conversations").is_some() {
        serde_json::from_value(value).context("the bench's shape")
    } else if has("haystack_sessions") {
        let instances: Vec<LmeInstance> = match value {
            Value::Array(_) => serde_json::from_value(value),
            one => serde_json::from_value(one).map(|i| vec![i]),
        }
        .context("LongMemEval's shape")?;
        instances
            .into_iter()
            .map(longmemeval)
            .collect::<Result<Vec<_>, _>>()
            .map(|c| DataSet {
                conversations: c.into_iter().flatten().collect(),
            })
    } else if has("conversation") && has("qa") {
        let samples: Vec<LocomoSample> = serde_json::from_value(value).context("LoCoMo's shape")?;
        samples
            .into_iter()
            .map(locomo)
            .collect::<Result<Vec<_>, _>>()
            .map(|conversations| DataSet { conversations })
    } else if has("qa") && has("session_1") {
        let chat: RealtalkChat = serde_json::from_value(value).context("REALTALK's shape")?;
        Ok(DataSet {
            conversations: vec![realtalk(chat, name)?],
        })
    } else {
        anyhow::bail!(
            "not a data set the bench reads: expected {{\"conversations\": [...]}} (the bench's \
             shape), LoCoMo's locomo10.json (a list of {{sample_id, conversation, qa}}), \
             LongMemEval's instances ({{question_id, question, haystack_sessions, ...}}) or a \
             REALTALK chat ({{name, session_1, session_1_date_time, ..., qa}})"
        )
    }
}

#[derive(Deserialize)]
struct LocomoSample {
    sample_id: String,
    conversation: Map<String, Value>,
    qa: Vec<LocomoQa>,
}

#[derive(Deserialize)]
struct LocomoQa {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    category: Option<Value>,
}

#[derive(Deserialize)]
struct LocomoTurn {
    dia_id: String,
    speaker: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// A message's `text` with the caption of the image it shares, as LoCoMo's authors show it.
fn with_caption(text: String, caption: Option<&str>) -> String {
    match caption.map(str::trim) {
        Some(caption) if !caption.is_empty() => format!("{text} [shares an image: {caption}]"),
        _ => text,
    }
}

/// One LoCoMo sample as a conversation of the bench's shape.
fn locomo(sample: LocomoSample) -> anyhow::Result<Conversation> {
    let c = &sample.conversation;
    let name = |key: &str| -> anyhow::Result<String> {
        c.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .with_context(|| format!("sample {}: no {key}", sample.sample_id))
    };
    let speakers = vec![name("speaker_a")?, name("speaker_b")?];
    let numbered = numbered_sessions(c);
    let mut sessions = Vec::with_capacity(numbered.len());
    for (n, turns) in numbered {
        let turns: Vec<LocomoTurn> = serde_json::from_value(turns.clone())
            .with_context(|| format!("sample {} session_{n}", sample.sample_id))?;
        let turns = turns
            .into_iter()
            .map(|t| Turn {
                text: with_caption(t.text, t.blip_caption.as_deref()),
                id: t.dia_id,
                speaker: t.speaker,
                at: None,
            })
            .collect();
        sessions.push(DataSession {
            date: name(&format!("session_{n}_date_time"))?,
            turns,
        });
    }
    Ok(with_questions(
        sample.sample_id,
        speakers,
        sessions,
        sample.qa,
    ))
}

/// A conversation of LoCoMo's kind (LoCoMo's, REALTALK's): its questions' evidence read as
/// the turn ids of `sessions` it names ([`turn_ids`]).
fn with_questions(
    id: String,
    speakers: Vec<String>,
    sessions: Vec<DataSession>,
    qa: Vec<LocomoQa>,
) -> Conversation {
    let known: HashSet<String> = sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| t.id.clone()))
        .collect();
    let questions = qa
        .into_iter()
        .map(|q| Question {
            evidence: turn_ids(&q.evidence, &known),
            question: q.question,
            category: q.category,
            date: None,
        })
        .collect();
    Conversation {
        id,
        speakers,
        sessions,
        questions,
    }
}

/// `session_<n>` holds a session's turns (`session_<n>_date_time` its date), in the order of n:
/// LoCoMo's and REALTALK's layout.
fn numbered_sessions(c: &Map<String, Value>) -> Vec<(u32, &Value)> {
    let mut numbered: Vec<(u32, &Value)> = c
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v)))
        .collect();
    numbered.sort_by_key(|(n, _)| *n);
    numbered
}

/// The turn ids a question's evidence names, each once, in the order written: ids as
/// `D<session>:<turn>`, separated however the data set separates them ("D8:6; D9:17",
/// "D5:3.", "D13:45:D20:19"), a range within one session ("D12:3-D12:5") as each of its
/// turns. Ids naming no turn of `known` are dropped.
fn turn_ids(written: &[String], known: &HashSet<String>) -> Vec<String> {
    static ID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"D(\d+):(\d+)(?:\s*-\s*D(\d+):(\d+))?").expect("a valid pattern")
    });
    let mut out: Vec<String> = Vec::new();
    for caps in written.iter().flat_map(|e| ID.captures_iter(e)) {
        let n = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
        let (Some(session), Some(first)) = (n(1), n(2)) else {
            continue;
        };
        let ids: Vec<String> = match (n(3), n(4)) {
            (Some(s2), Some(last)) if s2 == session && first <= last => {
                (first..=last).map(|t| format!("D{session}:{t}")).collect()
            }
            (Some(s2), Some(last)) => vec![format!("D{session}:{first}"), format!("D{s2}:{last}")],
            _ => vec![format!("D{session}:{first}")],
        };
        for id in ids {
            if known.contains(&id) && !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

/// One REALTALK chat (Lee et al., 2025; danny911kr/REALTALK `data/Chat_*.json`).
#[derive(Deserialize)]
struct RealtalkChat {
    name: Map<String, Value>,
    qa: Vec<LocomoQa>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
struct RealtalkTurn {
    dia_id: String,
    speaker: String,
    clean_text: String,
    #[serde(default)]
    date_time: Option<String>,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// One REALTALK chat as a conversation of the bench's shape, named `name`: its sessions
/// numbered as LoCoMo's, each message dated, its speakers `name.speaker_1` and `speaker_2`.
fn realtalk(chat: RealtalkChat, name: &str) -> anyhow::Result<Conversation> {
    let speakers: Vec<String> = ["speaker_1", "speaker_2"]
        .iter()
        .filter_map(|k| chat.name.get(*k).and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut sessions = Vec::new();
    for (n, turns) in numbered_sessions(&chat.rest) {
        let turns: Vec<RealtalkTurn> =
            serde_json::from_value(turns.clone()).with_context(|| format!("{name} session_{n}"))?;
        let date = chat
            .rest
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| turns.first().and_then(|t| t.date_time.clone()))
            .with_context(|| format!("{name}: session_{n} has no date"))?;
        let turns = turns
            .into_iter()
            .map(|t| Turn {
                id: t.dia_id,
                speaker: t.speaker,
                text: with_caption(t.clean_text, t.blip_caption.as_deref()),
                at: t.date_time,
            })
            .collect();
        sessions.push(DataSession { date, turns });
    }
    Ok(with_questions(
        name.to_string(),
        speakers,
        sessions,
        chat.qa,
    ))
}

#[derive(Deserialize)]
struct LmeInstance {
    question_id: Value,
    question: String,
    #[serde(default)]
    question_type: Option<Value>,
    #[serde(default)]
    question_date: Option<String>,
    haystack_session_ids: Vec<Value>,
    haystack_dates: Vec<String>,
    haystack_sessions: Vec<Vec<LmeTurn>>,
}

#[derive(Deserialize)]
struct LmeTurn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: Option<bool>,
}

/// A JSON string as itself, anything else as its JSON text.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One LongMemEval instance as a conversation of the bench's shape; `None` without evidence.
fn longmemeval(item: LmeInstance) -> anyhow::Result<Option<Conversation>> {
    let id = plain(&item.question_id);
    anyhow::ensure!(
        item.haystack_session_ids.len() == item.haystack_sessions.len()
            && item.haystack_dates.len() == item.haystack_sessions.len(),
        "instance {id}: {} sessions, {} session ids and {} dates",
        item.haystack_sessions.len(),
        item.haystack_session_ids.len(),
        item.haystack_dates.len()
    );
    let mut evidence = Vec::new();
    // A history may hold one session twice (on two dates): the second copy is `<id>#2`.
    let mut copies: HashMap<String, usize> = HashMap::new();
    let sessions = item
        .haystack_session_ids
        .iter()
        .zip(item.haystack_dates)
        .zip(item.haystack_sessions)
        .map(|((sid, date), turns)| {
            let sid = plain(sid);
            let copy = copies.entry(sid.clone()).or_insert(0);
            *copy += 1;
            let sid = match *copy {
                1 => sid,
                n => format!("{sid}#{n}"),
            };
            let turns = turns
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    let tid = format!("{sid}:{i}");
                    if t.has_answer == Some(true) {
                        evidence.push(tid.clone());
                    }
                    Turn {
                        id: tid,
                        speaker: t.role,
                        text: t.content,
                        at: None,
                    }
                })
                .collect();
            DataSession { date, turns }
        })
        .collect();
    if evidence.is_empty() {
        return Ok(None);
    }
    Ok(Some(Conversation {
        id: format!("lme-{id}"),
        speakers: vec!["user".into(), "assistant".into()],
        sessions,
        questions: vec![Question {
            question: item.question,
            evidence,
            category: item.question_type,
            date: item.question_date,
        }],
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

    /// A data set read from JSON written in place, as from a file named `chat.json`.
    fn read_value(value: Value) -> anyhow::Result<DataSet> {
        from_value(value, "chat")
    }

    #[test]
    fn dates_parse_as_the_data_set_writes_them() {
        let t = parse_date("1:56 pm on 8 May, 2023").unwrap();
        let d = chrono::DateTime::from_timestamp_millis(t).unwrap();
        assert_eq!(d.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        assert!(parse_date("10:37 am on 27 June, 2023").is_some());
        for other in [
            "2023/05/08 (Mon) 13:56",
            "2023-05-08T13:56:00Z",
            "2023-05-08T15:56:00+02:00",
            "2023-05-08 13:56",
            "2023-05-08T13:56:00",
            "08.05.2023, 13:56:00",
        ] {
            assert_eq!(parse_date(other), Some(t), "{other}");
        }
        assert_eq!(
            parse_date("2023-05-08"),
            Some(t - (13 * 60 + 56) * 60_000),
            "a date alone is its midnight"
        );
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(parse_date("2023-02-30 10:00"), None);
    }

    #[test]
    fn an_unreadable_date_stops_the_run_naming_the_session() {
        let data: DataSet = serde_json::from_value(json!({"conversations": [{
            "id": "c1", "speakers": ["A", "B"], "questions": [],
            "sessions": [{"date": "2023-05-08", "turns": []}, {"date": "soon", "turns": []}]
        }]}))
        .unwrap();
        let err = check_dates(&data).unwrap_err().to_string();
        assert!(
            err.contains("conversation c1 session 2") && err.contains("\"soon\""),
            "{err}"
        );
    }

    #[test]
    fn a_category_is_a_report_key_whatever_its_json_type() {
        let q = |category: Value| -> Question {
            serde_json::from_value(json!({"question": "q", "evidence": [], "category": category}))
                .unwrap()
        };
        assert_eq!(q(json!(3)).category_key(), "3");
        assert_eq!(q(json!("multi-hop")).category_key(), "multi-hop");
        assert_eq!(q(Value::Null).category_key(), "none");
        let plain: Question =
            serde_json::from_value(json!({"question": "q", "evidence": ["D1:1"]})).unwrap();
        assert_eq!(plain.category_key(), "none");
    }

    #[test]
    fn the_shipped_extract_loads_and_its_evidence_names_turns() {
        let raw = std::fs::read_to_string(DEFAULT_DATA).unwrap();
        let data: DataSet = serde_json::from_str(&raw).unwrap();
        assert_eq!(data.conversations.len(), 10);
        for c in &data.conversations {
            let ids: HashSet<&str> = c
                .sessions
                .iter()
                .flat_map(|s| s.turns.iter().map(|t| t.id.as_str()))
                .collect();
            assert!(c.sessions.iter().all(|s| parse_date(&s.date).is_some()));
            for q in &c.questions {
                assert!(q.evidence.iter().all(|e| ids.contains(e.as_str())));
            }
        }
    }

    #[test]
    fn locomo_as_published_reads_as_the_shipped_extract() {
        let raw = load(Path::new(&format!("{FIXTURES}/locomo/raw-excerpt.json"))).unwrap();
        let shipped = load(Path::new(DEFAULT_DATA)).unwrap();
        let shipped: HashMap<&str, &Conversation> = shipped
            .conversations
            .iter()
            .map(|c| (c.id.as_str(), c))
            .collect();
        assert_eq!(raw.conversations.len(), 3);
        for c in &raw.conversations {
            let whole = shipped[c.id.as_str()];
            assert_eq!(c.speakers, whole.speakers);
            for s in &c.sessions {
                // The excerpt keeps some sessions whole: each is the extract's session of its date.
                let same = whole.sessions.iter().find(|w| w.date == s.date).unwrap();
                assert_eq!(s, same, "{} {}", c.id, s.date);
            }
            for q in &c.questions {
                let same = whole
                    .questions
                    .iter()
                    .find(|w| w.question == q.question)
                    .unwrap();
                assert_eq!(q, same);
            }
        }
        let evidence_of = |question: &str| {
            raw.conversations
                .iter()
                .flat_map(|c| &c.questions)
                .find(|q| q.question == question)
                .map(|q| q.evidence.clone())
                .unwrap()
        };
        // "D8:6; D9:17" is two turns; "D" names none.
        assert_eq!(
            evidence_of("What did Melanie paint recently?"),
            ["D8:6", "D9:17"]
        );
        assert_eq!(
            evidence_of("What is one of Joanna's favorite movies?"),
            ["D1:18", "D1:20"]
        );
        let shared = &raw.conversations[0].sessions[0].turns[4];
        assert!(shared.text.ends_with("[shares an image: a photo of a dog walking past a wall with a painting of a woman]"), "{}", shared.text);
        check_dates(&raw).unwrap();
    }

    #[test]
    fn a_longmemeval_instance_is_a_conversation_whose_answer_turns_are_its_evidence() {
        let file = format!("{FIXTURES}/longmemeval/1_e982271f.json");
        let data = load(Path::new(&file)).unwrap();
        let [c] = data.conversations.as_slice() else {
            panic!("one conversation, not {}", data.conversations.len())
        };
        assert_eq!(c.id, "lme-e982271f");
        assert_eq!(c.speakers, ["user", "assistant"]);
        assert_eq!(c.sessions.len(), 1);
        let turns = &c.sessions[0].turns;
        assert_eq!(turns.len(), 6);
        assert_eq!(turns[0].speaker, "user");
        assert_eq!(turns[3].speaker, "assistant");
        assert!(
            turns[3].text.contains("Revolution Hall"),
            "{}",
            turns[3].text
        );
        assert_eq!(c.questions[0].evidence, [turns[3].id.clone()]);
        assert!(turns[3].id.ends_with(":3"));
        assert_eq!(c.questions[0].category_key(), "single-session-assistant");
        assert_eq!(
            c.questions[0].date.as_deref(),
            Some("2023/05/29 (Mon) 23:58")
        );
        check_dates(&data).unwrap();

        // The same instance in a list, and in a folder of one-instance files, reads the same.
        let one: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let listed = read_value(Value::Array(vec![one.clone()])).unwrap();
        assert_eq!(listed.conversations, data.conversations);
        let folder = load(Path::new(&format!("{FIXTURES}/longmemeval"))).unwrap();
        assert_eq!(folder.conversations, data.conversations);

        // Without an answer turn (an abstention question) it is left out.
        let mut abstention = one;
        for turn in abstention["haystack_sessions"][0].as_array_mut().unwrap() {
            turn["has_answer"] = json!(false);
        }
        assert!(read_value(abstention).unwrap().conversations.is_empty());
    }

    #[test]
    fn a_file_of_another_shape_says_which_shapes_are_read() {
        let err = read_value(json!([{"dialogue": []}]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("LoCoMo") && err.contains("LongMemEval"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            read_value(json!({"conversations": [{"id": "c"}]})).unwrap_err()
        );
        assert!(err.contains("the bench's shape"), "{err}");
    }

    #[test]
    fn a_conversation_id_given_twice_stops_the_run() {
        let conv = json!({"id": "c1", "speakers": ["A", "B"], "sessions": [], "questions": []});
        let data = read_value(json!({"conversations": [conv.clone(), conv]})).unwrap();
        let err = check_ids(&data).unwrap_err().to_string();
        assert!(err.contains("c1"), "{err}");
    }

    #[test]
    fn a_session_given_twice_keeps_both_copies_apart_and_sessions_go_by_number() {
        let turn = |text: &str| json!({"role": "user", "content": text, "has_answer": true});
        let lme = read_value(json!({
            "question_id": 7, "question": "q?",
            "haystack_session_ids": ["a", "b", "a"],
            "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00", "2023/05/03 (Wed) 10:00"],
            "haystack_sessions": [[turn("one")], [turn("two")], [turn("one")]]
        }))
        .unwrap();
        let c = &lme.conversations[0];
        assert_eq!(c.id, "lme-7");
        let ids: Vec<&str> = c.sessions.iter().map(|s| s.turns[0].id.as_str()).collect();
        assert_eq!(ids, ["a:0", "b:0", "a#2:0"]);
        assert_eq!(c.questions[0].evidence, ["a:0", "b:0", "a#2:0"]);
        check_ids(&lme).unwrap();

        let session = |id: &str| json!([{"dia_id": id, "speaker": "A", "text": id}]);
        let locomo = read_value(json!([{
            "sample_id": "c", "qa": [],
            "conversation": {
                "speaker_a": "A", "speaker_b": "B",
                "session_10": session("D10:1"), "session_10_date_time": "2023-05-10",
                "session_2": session("D2:1"), "session_2_date_time": "2023-05-02",
                "session_1": session("D1:1"), "session_1_date_time": "2023-05-01"
            }
        }]))
        .unwrap();
        let order: Vec<&str> = locomo.conversations[0]
            .sessions
            .iter()
            .map(|s| s.turns[0].id.as_str())
            .collect();
        assert_eq!(order, ["D1:1", "D2:1", "D10:1"]);
    }

    #[test]
    fn a_realtalk_chat_reads_with_its_messages_dated_and_its_evidence_ranges_spread() {
        let msg = |id: &str, who: &str, at: &str| {
            json!({"clean_text": format!("text of {id}"), "speaker": who, "date_time": at,
                   "img_file": [], "img_url": [], "dia_id": id})
        };
        let mut shared = msg("D1:2", "bo", "30.12.2023, 00:32:20");
        shared["blip_caption"] = json!(" a bowl of cereal ");
        let data = read_value(json!({
            "name": {"speaker_1": "Ana", "speaker_2": "bo"},
            "session_2": [msg("D2:1", "bo", "02.01.2024, 09:00:00")],
            "session_2_date_time": "02.01.2024, 09:00:00",
            "events_session_2": {"agent_a": [], "agent_b": []},
            "session_1": [msg("D1:1", "Ana", "29.12.2023, 22:42:04"),
                          shared,
                          msg("D1:3", "Ana", "30.12.2023, 00:33:00")],
            "session_1_date_time": "29.12.2023, 22:42:04",
            "qa": [{"question": "Where?", "answer": "Here", "category": 1,
                    "evidence": ["D1:1-D1:3; D2:1", "D2:1.", "D1:2:D2:1", "D7:1"]},
                   {"question": "When?", "answer": "Then", "category": 2, "evidence": []}]
        }))
        .unwrap();
        check_dates(&data).unwrap();
        let c = &data.conversations[0];
        assert_eq!(c.id, "chat", "named by its file");
        assert_eq!(c.speakers, ["Ana", "bo"]);
        let ids: Vec<&str> = c
            .sessions
            .iter()
            .flat_map(|s| &s.turns)
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids, ["D1:1", "D1:2", "D1:3", "D2:1"]);
        assert_eq!(
            c.sessions[0].turns[1].text, "text of D1:2 [shares an image: a bowl of cereal]",
            "an image shared keeps its caption, as in LoCoMo"
        );
        assert_eq!(c.sessions[0].turns[2].text, "text of D1:3");
        let at = c.sessions[0].turns[1]
            .at
            .as_deref()
            .and_then(parse_date)
            .unwrap();
        let d = chrono::DateTime::from_timestamp_millis(at).unwrap();
        assert_eq!(d.to_rfc3339(), "2023-12-30T00:32:20+00:00");
        assert_eq!(c.questions[0].evidence, ["D1:1", "D1:2", "D1:3", "D2:1"]);
        assert!(c.questions[1].evidence.is_empty());
        assert_eq!(c.questions[0].category_key(), "1");
    }

    #[test]
    fn an_unreadable_message_time_stops_the_run_naming_the_turn() {
        let data = read_value(json!({"conversations": [{
            "id": "c3", "speakers": ["A", "B"], "questions": [],
            "sessions": [{"date": "2023-05-08", "turns": [
                {"id": "D1:1", "speaker": "A", "text": "hi", "at": "teatime"}]}]
        }]}))
        .unwrap();
        let err = check_dates(&data).unwrap_err().to_string();
        assert!(
            err.contains("c3 turn D1:1") && err.contains("teatime"),
            "{err}"
        );
    }

    #[test]
    fn a_turn_id_given_twice_in_a_conversation_stops_the_run() {
        let t = json!({"id": "D1:1", "speaker": "A", "text": "hi"});
        let data = read_value(json!({"conversations": [{
            "id": "c2", "speakers": ["A", "B"], "questions": [],
            "sessions": [{"date": "2023-05-08", "turns": [t.clone()]},
                         {"date": "2023-05-09", "turns": [t]}]
        }]}))
        .unwrap();
        let err = check_ids(&data).unwrap_err().to_string();
        assert!(err.contains("c2") && err.contains("D1:1"), "{err}");
        let err = read_value(json!([])).unwrap_err().to_string();
        assert!(err.contains("no conversation"), "{err}");
    }
}
