//! Hostile input: Cypher-injection strings in every text field of every write route come back
//! verbatim and touch nothing else ([`injection`]); nested, invalid, oversize and mistyped
//! bodies get a clean JSON 4xx with a stable code and leave the server answering ([`bodies`]).

mod bodies;
mod injection;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::helpers::{client_with_key, count, mint_key, split, store, TestApp};

/// Strings that would change a query if they were ever pasted into Cypher (or Lucene), plus a
/// unicode mix with direction overrides and zero-width characters. No NUL, no control
/// characters, no surrounding whitespace (text fields are trimmed), each under 100 characters
/// (the `agent` limit).
pub const PAYLOADS: &[&str] = &[
    "'}) MATCH (n) DETACH DELETE n //",
    "\" OR 1=1 //",
    "` backticks`) MATCH (n) DETACH DELETE n RETURN `x",
    "$param $project {project: $project}",
    "{{x}} ${x} %s %n {0}",
    "CALL db.labels() YIELD label RETURN label",
    "\"}) CREATE (:Pwned {by: 'cairn'}) WITH 1 AS x MATCH (n) DETACH DELETE n //",
    "x'}) SET n.project = 'stolen' RETURN n UNION MATCH (n) RETURN n //",
    "\\' \\\" \\\\ \\u0027 ; -- /* */ ../../etc/passwd",
    "Ünïcødé — 日本語 🦀 \u{202E}gnp.exe \u{200B}zero\u{FEFF}width 𝔘𝔫𝔦 ∀x∈ℝ",
    "AND OR NOT + - && || ! ( ) { } [ ] ^ \" ~ * ? : \\ / title:x~2",
];

/// `s` as one percent-encoded path segment (`/`, `?`, `#` and `%` included).
pub fn seg(s: &str) -> String {
    let mut u = reqwest::Url::parse("http://x/").expect("url");
    u.path_segments_mut().expect("segments").push(s);
    u.path()[1..].to_string()
}

/// `pairs` as a percent-encoded query string.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut u = reqwest::Url::parse("http://x/").expect("url");
    u.query_pairs_mut().extend_pairs(pairs);
    u.query().unwrap_or_default().to_string()
}

/// `answer` is the JSON error `status` with `code`; `what` names the request for the message.
pub fn assert_error(answer: &(u16, Value), status: u16, code: &str, what: &str) {
    let (s, b) = answer;
    assert_eq!(
        (*s, b["error"]["code"].as_str()),
        (status, Some(code)),
        "{what}: {b}"
    );
}

/// The server still answers: it neither crashed nor wedged.
pub async fn assert_alive(app: &TestApp, after: &str) {
    let (s, b) = app.get("/healthz").await;
    assert_eq!(s, 200, "/healthz after {after}: {b}");
}

/// Every label cairn writes; each is looked up through its project index.
const LABELS: [&str; 11] = [
    "Session",
    "Operation",
    "Decision",
    "Option",
    "File",
    "Belief",
    "Pattern",
    "Memory",
    "ExtractionRun",
    "ApiKey",
    "AuditEvent",
];

/// Nodes of `project` by label (labels without any are left out).
pub async fn labels(project: &str) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    let project_node = count(
        "MATCH (n:Project {id: $project}) RETURN count(n) AS n",
        project,
    );
    counts.insert("Project".to_string(), project_node.await);
    for label in LABELS {
        let cypher = format!("MATCH (n:{label} {{project: $project}}) RETURN count(n) AS n");
        counts.insert(label.to_string(), count(&cypher, project).await);
    }
    counts.retain(|_, n| *n > 0);
    counts
}

/// Nothing an injection would create or re-home exists anywhere.
pub async fn assert_no_escape() {
    let rows = store()
        .rows(neo4rs::query(
            "OPTIONAL MATCH (p:Pwned) WITH count(p) AS pwned
             OPTIONAL MATCH (s:Session {project: 'stolen'}) RETURN pwned, count(s) AS stolen",
        ))
        .await
        .expect("escape query");
    let (pwned, stolen): (i64, i64) = (
        rows[0].get("pwned").unwrap(),
        rows[0].get("stolen").unwrap(),
    );
    assert_eq!((pwned, stolen), (0, 0), "an injected clause ran");
}

/// A small project of its own, written through the API before the hostile input, that must
/// be exactly as it was afterwards.
pub struct Sentinel {
    project: String,
    before: BTreeMap<String, i64>,
}

impl Sentinel {
    pub async fn plant(app: &TestApp) -> Self {
        let project = format!("{}-sentinel", app.project);
        let client = client_with_key(&mint_key(&project, "admin").await);
        let post = |path: &str, body: serde_json::Value| {
            let req = client.post(app.url(path)).json(&body);
            async move { split(req.send().await.expect("request")).await }
        };
        let sid = format!("{project}-s");
        let writes = [
            (
                "/v1/sessions".to_string(),
                json!({"project": project, "session_id": sid, "task": "sentinel"}),
            ),
            (
                format!("/v1/sessions/{sid}/operations?sync=true"),
                json!({"operations": [{"type": "write", "summary": "s", "files_modified": ["a.rs"]}]}),
            ),
            (
                "/v1/decisions".to_string(),
                json!({"project": project, "subject": "s", "choice": "c", "rationale": "r", "alternatives": ["x"]}),
            ),
            (
                "/v1/beliefs".to_string(),
                json!({"project": project, "content": "sentinel belief"}),
            ),
            (
                "/v1/memories".to_string(),
                json!({"project": project, "kind": "fact", "content": "sentinel memory"}),
            ),
        ];
        for (path, body) in writes {
            let (s, b) = post(&path, body).await;
            assert!(s == 200 || s == 201, "sentinel {path}: {s} {b}");
        }
        let before = labels(&project).await;
        assert_eq!(before.get("Operation"), Some(&1), "{before:?}");
        Self { project, before }
    }

    pub async fn assert_intact(&self) {
        assert_eq!(
            labels(&self.project).await,
            self.before,
            "the sentinel project changed"
        );
        assert_no_escape().await;
    }
}
