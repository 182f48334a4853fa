//! `POST /v1/search`: turn-level search over operations, decisions, memories and session
//! summaries — BM25 always, vectors when an embedder is configured (faked at the HTTP
//! boundary), filters, diversity, validation.

use std::sync::atomic::Ordering;

use cairn::embed::signature;
use cairn::recall::turn_index;
use clap::Parser;
use serde_json::{json, Value};
use wiremock::{matchers, Mock, MockServer};

use crate::helpers::{app_with_embeddings, embeddings_answer, refusing_embeddings};
use crate::helpers::{count, settle, TestApp};

pub async fn turn_search(app: &TestApp, body: Value) -> (u16, Value) {
    app.post("/v1/search", &body).await
}

/// Waits (the turn index is eventually consistent) until `query` answers with a hit that
/// satisfies `found`; returns the last answer.
pub async fn search_until(app: &TestApp, body: Value, found: impl Fn(&[Value]) -> bool) -> Value {
    settle(
        60,
        || async {
            let (status, answer) = turn_search(app, body.clone()).await;
            assert_eq!(status, 200, "{answer}");
            answer
        },
        |answer: &Value| {
            found(
                answer["operations"]
                    .as_array()
                    .map_or(&[], |a| a.as_slice()),
            )
        },
    )
    .await
}

/// A user's question in session `sid` and the assistant's answer, as operations `{sid}-q` and
/// `{sid}-a`.
fn asked_and_answered(sid: &str, question: &str, answer: &str) -> [Value; 2] {
    [
        json!({"id": format!("{sid}-q"), "type": "message", "role": "user",
               "summary": "question", "content": question}),
        json!({"id": format!("{sid}-a"), "type": "message", "role": "assistant",
               "summary": "answer", "content": answer}),
    ]
}

/// Records `decision` (subject, choice, …) and a lesson `learnt` in session `sid`.
async fn decided_and_learnt(app: &TestApp, sid: &str, mut decision: Value, learnt: &str) {
    decision["project"] = json!(app.project);
    decision["session_id"] = json!(sid);
    let (status, body) = app.post("/v1/decisions", &decision).await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let (status, body) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": sid, "kind": "lesson",
                    "content": learnt}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
}

/// A session about token expiry with a few unrelated turns around the answer.
async fn conversation(app: &TestApp) -> String {
    let sid = app.session().await;
    let [q, a] = asked_and_answered(
        &sid,
        "when do the access tokens expire?",
        "Access tokens expire after thirty minutes of inactivity; the refresh token rotates on every use.",
    );
    app.ops_sync(
        &sid,
        json!([
            q,
            a,
            {"id": format!("{sid}-t"), "type": "tool_call", "tool": "Bash", "target": "cargo test auth",
             "summary": "12 passed", "status": "ok"},
            {"id": format!("{sid}-r"), "type": "read", "target": "src/auth.rs", "summary": "read the auth module",
             "files_read": ["src/auth.rs"]},
            {"id": format!("{sid}-w"), "type": "message", "role": "user", "summary": "weather",
             "content": "unrelated: the nightly backup job is slow"}
        ]),
    )
    .await;
    decided_and_learnt(
        app,
        &sid,
        json!({"subject": "session lifetime", "choice": "sliding expiry of thirty minutes",
               "rationale": "fewer forced logins",
               "alternatives": ["fixed daily lifetime", "never expire"]}),
        "rotating refresh tokens broke the mobile client once",
    )
    .await;
    let (status, body) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": "settled how tokens expire", "next_steps": ["document expiry"]}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    sid
}

/// The ids of a project's first 50 full-text rows for the same words narrowed inside Lucene
/// (`inside`, with the project's clause), then after it (`words` alone).
async fn both_forms(
    store: &cairn::graph::Store,
    filter: &cairn::graph::turns::Filter<'_>,
    inside: &str,
    words: &str,
) -> (Vec<String>, Vec<String>) {
    use cairn::graph::turns::fulltext;
    let ids = |rows: Vec<cairn::graph::turns::TurnRow>| -> Vec<String> {
        rows.into_iter().map(|r| r.id).collect()
    };
    let narrowed = fulltext(store, filter, None, inside, 50, 50).await.unwrap();
    let after = fulltext(store, filter, None, words, 50, 1_000_000)
        .await
        .unwrap();
    (ids(narrowed), ids(after))
}

/// A project that is nearly the whole full-text index is narrowed to after Lucene ranks (the
/// words alone, the project's rows kept) instead of inside it: the same rows in the same
/// order, with Neo4j's real index, and the same rows when one session is left out (as prompt
/// recall leaves out the asking one); asked of too few, fewer rows than wanted come back (and
/// search asks again inside Lucene).
#[tokio::test]
async fn a_project_narrowed_to_after_lucene_keeps_its_rows_in_their_order() {
    use cairn::graph::turns::{fulltext, Filter};
    use cairn::recall::rank::{lucene_query_on, lucene_words_on};
    let app = TestApp::spawn().await;
    let other = TestApp::spawn().await;
    let asking = conversation(&app).await;
    conversation(&other).await;
    for a in [&app, &other] {
        search_until(
            a,
            json!({"project": a.project, "query": "access tokens expire", "limit": 10}),
            |ops| ops.len() >= 3,
        )
        .await;
    }
    let store = crate::helpers::store();
    let filter = Filter {
        project: &app.project,
        types: None,
        sessions: None,
        exclude_session: None,
    };
    let text = "access tokens expire after the refresh";
    let inside = lucene_query_on("search_text", &app.project, text).unwrap();
    let words = lucene_words_on("search_text", text).unwrap();
    assert!(!words.contains("project"), "{words}");
    let (narrowed, after) = both_forms(&store, &filter, &inside, &words).await;
    assert!(narrowed.len() >= 3, "{narrowed:?}");
    assert_eq!(after, narrowed);
    // A second session, then the first left out: the same rows either way (their order may
    // differ where two scores all but tie, which project-local BM25 orders again anyway).
    let later = app.session().await;
    let pair = asked_and_answered(
        &later,
        "do service account tokens expire too, or only access tokens after the refresh?",
        "Service account tokens never expire; they are revoked by hand.",
    );
    app.ops_sync(&later, json!(pair)).await;
    search_until(
        &app,
        json!({"project": app.project, "query": "service account tokens", "limit": 10}),
        |ops| ops.iter().any(|o| o["session_id"] == later.as_str()),
    )
    .await;
    let leaving = Filter {
        exclude_session: Some(&asking),
        ..filter
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let (narrowed_out, after_out) = both_forms(&store, &leaving, &inside, &words).await;
    assert_eq!(
        sorted(narrowed_out.clone()),
        vec![format!("{later}-a"), format!("{later}-q")],
        "only the later session's turns that hold the words"
    );
    assert_eq!(sorted(after_out), sorted(narrowed_out));
    // Asked of the index for one row, fewer rows than wanted come back: search then asks
    // again inside Lucene.
    let few = fulltext(&store, &filter, None, &words, narrowed.len(), 1)
        .await
        .unwrap();
    let few: Vec<&str> = few.iter().map(|r| r.id.as_str()).collect();
    assert!(few.len() < narrowed.len(), "{few:?}");
    app.stop().await;
    other.stop().await;
}

fn kinds(ops: &[Value]) -> Vec<&str> {
    ops.iter()
        .map(|o| o["type"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn turns_decisions_memories_and_summaries_are_found_by_their_words() {
    let app = TestApp::spawn().await;
    let sid = conversation(&app).await;
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "when do tokens expire", "limit": 10}),
        |ops| {
            let k = kinds(ops);
            k.contains(&"message") && k.contains(&"decision") && k.contains(&"summary")
        },
    )
    .await;
    assert_eq!(answer["mode"], "fulltext", "{answer}");
    let ops = answer["operations"].as_array().expect("operations");
    let top = &ops[0];
    assert_eq!(top["session_id"], sid.as_str(), "{answer}");
    assert_eq!(top["matched_by"], "fulltext");
    assert!(top["score"].as_f64().unwrap() > 0.0);
    assert!(
        top["snippet"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("expir"),
        "{top}"
    );
    let question = ops
        .iter()
        .find(|o| o["operation_id"] == format!("{sid}-q").as_str())
        .expect("the question is found");
    assert_eq!(question["seq"], 1);
    assert_eq!(question["role"], "user");
    // A plain read has nothing worth finding; the unrelated turn does not match.
    assert!(!ops.iter().any(|o| o["type"] == "read"), "{answer}");
    assert!(!ops
        .iter()
        .any(|o| o["operation_id"] == format!("{sid}-w").as_str()));

    // A decision is found by what it rejected, and `types` keeps only decisions.
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "fixed daily lifetime", "types": ["decision"]}),
        |ops| !ops.is_empty(),
    )
    .await;
    let ops = answer["operations"].as_array().unwrap();
    assert_eq!(kinds(ops), ["decision"], "{answer}");
    assert!(ops[0]["snippet"]
        .as_str()
        .unwrap()
        .contains("rejected: fixed daily lifetime"));

    // Memories are turns too.
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "mobile client broke", "types": ["memory"]}),
        |ops| !ops.is_empty(),
    )
    .await;
    assert_eq!(answer["operations"][0]["type"], "memory", "{answer}");
    assert_eq!(answer["operations"][0]["session_id"], sid.as_str());
}

#[tokio::test]
async fn another_projects_turns_stay_hidden_and_lucene_syntax_is_text() {
    let a = TestApp::spawn().await;
    let sid = a.session().await;
    a.ops_sync(
        &sid,
        json!([{"type": "message", "role": "user", "summary": "s",
                "content": "zanzibar quokka migration plan (phase:2)"}]),
    )
    .await;
    search_until(
        &a,
        json!({"project": a.project, "query": "zanzibar quokka"}),
        |ops| ops.len() == 1,
    )
    .await;
    // Syntax characters are searched as text, never parsed.
    let (status, body) = turn_search(
        &a,
        json!({"project": a.project, "query": "quokka (phase:2) AND \"zanz* OR ~"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["operations"].as_array().unwrap().len(), 1, "{body}");

    let b = TestApp::spawn().await;
    let (status, body) = turn_search(
        &b,
        json!({"project": b.project, "query": "zanzibar quokka"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["operations"], json!([]), "{body}");
    // B's key cannot read A's project.
    let (status, body) = turn_search(&b, json!({"project": a.project, "query": "zanzibar"})).await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn bad_turn_searches_answer_400_with_stable_codes() {
    let app = TestApp::spawn().await;
    for (body, code, field) in [
        (
            json!({"project": app.project, "query": "x", "limit": 0}),
            "invalid_limit",
            "limit",
        ),
        (
            json!({"project": app.project, "query": "x", "limit": 51}),
            "invalid_limit",
            "limit",
        ),
        (
            json!({"project": app.project, "query": "x", "types": ["message", "bogus"]}),
            "invalid_types",
            "types[1]",
        ),
        (
            json!({"project": app.project, "query": "x", "types": vec!["message"; 17]}),
            "invalid_types",
            "types",
        ),
        (
            json!({"project": app.project, "query": "x".repeat(1001)}),
            "field_too_large",
            "query",
        ),
    ] {
        let (status, answer) = turn_search(&app, body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
}

/// The project's operations whose vector `model` made, with its dimension recorded.
async fn embedded_by(app: &TestApp, model: &str) -> i64 {
    count(
        &format!(
            "MATCH (o:Operation {{project: $project}}) WHERE o.embedding_model = '{model}' \
             AND o.embedding_dim = 384 AND o.embedding IS NOT NULL RETURN count(o) AS n"
        ),
        &app.project,
    )
    .await
}

/// An operation's stored vector and signature.
#[derive(serde::Deserialize)]
pub struct Signed {
    pub id: String,
    pub vector: Vec<f32>,
    #[serde(with = "serde_bytes")]
    pub sig: Option<Vec<u8>>,
}

/// The project's stored vectors with their signatures.
pub async fn signatures(app: &TestApp) -> Vec<Signed> {
    crate::helpers::store()
        .fetch(
            neo4rs::query(
                "MATCH (o:Operation {project: $project}) WHERE o.embedding IS NOT NULL \
                 RETURN o.id AS id, o.embedding AS vector, o.embedding_sig AS sig",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("stored vectors")
}

/// The project's vectors lose their signatures.
async fn unsign(app: &TestApp) {
    crate::helpers::store()
        .run(
            neo4rs::query("MATCH (o:Operation {project: $project}) REMOVE o.embedding_sig")
                .param("project", app.project.as_str()),
        )
        .await
        .expect("remove the signatures");
    assert!(signatures(app).await.iter().all(|v| v.sig.is_none()));
}

/// Failed embeddings of this project's sessions are due again now, and the sessions are
/// queued again: the test database is shared, and another cairn on it (a failing endpoint,
/// an older version without a model) may have taken them first.
async fn retry_now(app: &TestApp) {
    // Due now, so the session queues as of now: the indexer serves every project of the
    // database, and a retry time of 0 would queue it behind every session touched since.
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {project: $project}) \
                 SET s.turns_retry_at = timestamp(), s.turns_attempts = 0, s.turns_pending = true",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("reset retry time");
}

pub fn matched<'a>(answer: &'a Value, id: &str) -> Option<&'a str> {
    answer["operations"]
        .as_array()?
        .iter()
        .find(|o| o["operation_id"] == id)
        .and_then(|o| o["matched_by"].as_str())
}

/// Waits until nothing of the project awaits embedding and `id` is found; the last answer.
/// Waits for the project's turns to be embedded: the indexer serves every project of the
/// database in turn, so under a full parallel suite this takes longer than the work itself.
pub async fn until_embedded(app: &TestApp, body: &Value, id: &str) -> Value {
    settle(
        180,
        || async {
            retry_now(app).await;
            turn_search(app, body.clone()).await.1
        },
        |a: &Value| a["pending_embeddings"] == 0 && matched(a, id).is_some(),
    )
    .await
}

/// The project's passages made by the fake model (with its dimension), or of one session.
async fn passages(app: &TestApp, session: Option<&str>) -> i64 {
    let within = session.map_or(String::new(), |s| format!(" AND p.session_id = '{s}'"));
    count(
        &format!(
            "MATCH (p:Passage {{project: $project}}) WHERE p.embedding_model = 'remote:fake#unlabelled' \
             AND p.embedding_dim = 384 AND p.embedding IS NOT NULL{within} RETURN count(p) AS n"
        ),
        &app.project,
    )
    .await
}

/// How many times `text` was sent to be embedded.
async fn sent(server: &MockServer, text: &str) -> usize {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .map(|b| match &b["input"] {
            Value::Array(items) => items.iter().filter(|i| *i == text).count(),
            Value::String(s) => usize::from(s == text),
            _ => 0,
        })
        .sum()
}

/// An embeddings endpoint faked at the HTTP boundary, and a cairn using it (held while the
/// guard lives: the indexer is global).
pub async fn fake_embeddings() -> (MockServer, TestApp, tokio::sync::MutexGuard<'static, ()>) {
    let server = embeddings_endpoint().await;
    let (app, turn) = app_with_embeddings(&server).await;
    (server, app, turn)
}

/// An embeddings endpoint faked at the HTTP boundary.
async fn embeddings_endpoint() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/embeddings"))
        .respond_with(embeddings_answer)
        .mount(&server)
        .await;
    server
}

/// A long turn is found by the one sentence that answers when its own vector is drowned by
/// the rest: its passages are embedded beside it (and added on upgrade to turns embedded
/// before they were kept), and deleted with their session or project.
#[tokio::test]
async fn a_long_turn_is_found_by_the_passage_that_answers() {
    let (server, app, _turn) = fake_embeddings().await;
    let sid = app.session().await;
    let other = app.session().await;
    let long = format!("{sid}-long");
    // The same words in another session: one of the two is listed, whichever ranks first.
    let copy = format!("{other}-long");
    let short = format!("{sid}-short");
    let content = "We walked along the harbour and counted the boats in the morning fog. \
                   The bakery on the corner sold out of rye bread before noon again. \
                   Login and authentication with auth all broke yesterday. \
                   My cousin repainted the garden shed a bright shade of yellow. \
                   Afterwards everyone argued about which film to watch tonight.";
    let cut = cairn::domain::passages::of(content);
    assert_eq!(cut.len(), 5, "{cut:?}");
    app.ops_sync(
        &sid,
        json!([
            {"id": long, "type": "message", "role": "user", "summary": "s", "content": content},
            {"id": short, "type": "message", "role": "user", "summary": "s",
             "content": "auth latency"}
        ]),
    )
    .await;
    app.ops_sync(
        &other,
        json!([{"id": copy, "type": "message", "role": "user", "summary": "s", "content": content}]),
    )
    .await;
    // No word of the query is in either turn: meaning alone finds them.
    let body = json!({"project": app.project, "query": "signin credentials failing"});
    let answer = until_embedded(&app, &body, &long).await;
    let first = |a: &Value| {
        a["operations"][0]["operation_id"]
            .as_str()
            .map(str::to_string)
    };
    let is_long = |id: Option<&str>| id == Some(long.as_str()) || id == Some(copy.as_str());
    // The long turn (or its copy) first, found by meaning alone.
    let long_first_by_meaning = |answer: &Value| {
        let top = first(answer);
        assert!(is_long(top.as_deref()), "{answer}");
        assert_eq!(
            matched(answer, top.as_deref().unwrap()),
            Some("vector"),
            "{answer}"
        );
    };
    long_first_by_meaning(&answer);
    let listed = |a: &Value| {
        [&long, &copy]
            .iter()
            .filter(|id| matched(a, id).is_some())
            .count()
    };
    assert_eq!(listed(&answer), 1, "the same words listed once: {answer}");
    assert_eq!(passages(&app, Some(&sid)).await, 5);
    assert_eq!(passages(&app, Some(&other)).await, 5);
    let marked = count(
        &format!(
            "MATCH (o:Operation {{project: $project, id: '{short}'}}) \
             WHERE o.passages_model = 'remote:fake#unlabelled' \
             AND NOT EXISTS {{ MATCH (p:Passage {{operation_id: o.id}}) }} RETURN count(o) AS n"
        ),
        &app.project,
    )
    .await;
    assert_eq!(marked, 1, "the short turn is recorded as having no passage");

    // As before passages were kept: without them the short turn ranks first. The sessions
    // are claimed by another replica meanwhile: this instance's start-up backfill, put off
    // when Neo4j is slow, may queue them again at any moment, and its indexer would embed
    // their passages before the search below.
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (p:Passage {project: $project}) DELETE p WITH count(*) AS gone \
                 MATCH (o:Operation {project: $project}) REMOVE o.passages_model \
                 WITH count(*) AS done \
                 MATCH (s:Session {project: $project}) SET s.turns_model = 'remote:fake#unlabelled', \
                 s.index_claim_holder = 'another replica', s.index_claim_until = $until",
            )
            .param("project", app.project.as_str())
            .param("until", cairn::graph::now_ms() + 3_600_000),
        )
        .await
        .expect("forget the passages");
    let (_, answer) = turn_search(&app, body.clone()).await;
    assert_eq!(first(&answer).as_deref(), Some(short.as_str()), "{answer}");
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {project: $project}) \
                 REMOVE s.index_claim_holder, s.index_claim_until",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("the claims end");
    // The upgrade queues the sessions again; their passages alone are embedded, not their
    // vectors.
    let whole_before = sent(&server, content).await;
    assert_eq!(whole_before, 2, "each long turn's whole text embedded once");
    cairn::graph::turns::backfill(&crate::helpers::store(), "remote:fake#unlabelled")
        .await
        .expect("queue the sessions");
    let answer = settle(
        180,
        || async { turn_search(&app, body.clone()).await.1 },
        |a: &Value| a["pending_embeddings"] == 0 && is_long(first(a).as_deref()),
    )
    .await;
    long_first_by_meaning(&answer);
    assert_eq!(passages(&app, None).await, 10);
    assert_eq!(sent(&server, content).await, whole_before);

    // Passages go with their session, then with their project.
    let (status, body) = app.delete(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(passages(&app, Some(&sid)).await, 0);
    assert_eq!(passages(&app, Some(&other)).await, 5);
    let (status, body) = app.delete(&format!("/v1/projects/{}", app.project)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        count(
            "MATCH (p:Passage {project: $project}) RETURN count(p) AS n",
            &app.project
        )
        .await,
        0
    );
}

/// Vectors made but not stored wait for the next pass: when Neo4j refuses a pass's write,
/// its sessions are read again later and their vectors stored as made, their texts not sent
/// to be embedded again.
#[tokio::test]
async fn vectors_neo4j_refused_to_store_are_stored_later_without_embedding_again() {
    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        embed: cairn::config::EmbedSettings,
    }
    let server = embeddings_endpoint().await;
    // No other embedding indexer runs meanwhile; this app's own makes texts only.
    let _turn = cairn_testkit::embed::embedding_turn().await;
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let texts = [
        "The harbour ferry leaves at seven from the north pier on weekdays.",
        "Our rye starter needs feeding twice a day while the summer lasts.",
    ];
    let ids = [format!("{sid}-ferry"), format!("{sid}-rye")];
    app.ops_sync(
        &sid,
        json!([
            {"id": ids[0], "type": "message", "role": "user", "content": texts[0]},
            {"id": ids[1], "type": "message", "role": "user", "content": texts[1]}
        ]),
    )
    .await;
    // The two operations may not both carry a model's name: a uniqueness constraint on a
    // label only they hold makes Neo4j refuse the write of the pass that embeds them.
    let store = crate::helpers::store();
    for statement in [
        "CREATE CONSTRAINT refused_vector_write IF NOT EXISTS \
         FOR (o:RefusedVectorWrite) REQUIRE o.embedding_model IS UNIQUE",
        "MATCH (o:RefusedVectorWrite) REMOVE o:RefusedVectorWrite",
    ] {
        store
            .run(neo4rs::query(statement))
            .await
            .expect("the refusing constraint");
    }
    let label = |verb: &str| {
        let statement = format!(
            "MATCH (o:Operation {{project: $project}}) WHERE o.id IN $ids {verb} o:RefusedVectorWrite"
        );
        neo4rs::query(&statement)
            .param("project", app.project.as_str())
            .param("ids", ids.to_vec())
    };
    store.run(label("SET")).await.expect("label the two");

    let mut settings = Defaults::try_parse_from(["cairn-test"])
        .expect("the CAIRN_* environment variables are valid")
        .embed;
    settings.switch = cairn::config::EmbedSwitch::On;
    settings.base_url = Some(format!("{}/v1", server.uri()));
    settings.model = "fake".into();
    // Read again at once after a failure.
    settings.retry_ms = 1;
    let embedder = cairn::embed::Embedder::from_settings(&settings, 384).expect("vectors on");
    let holder = format!("refusal-{}", app.project);
    let embedded = || async {
        count(
            "MATCH (o:Operation {project: $project}) WHERE o.embedding IS NOT NULL \
             RETURN count(o) AS n",
            &app.project,
        )
        .await
    };
    // Passes over the database's queue until the one holding the two is refused (a pass of
    // other tests' sessions may fail for its own reasons meanwhile).
    let mut refusal = None;
    for _ in 0..500 {
        match turn_index::run_once(&store, Some(&embedder), &holder).await {
            Err(err) if err.is_duplicate() => {
                refusal = Some(err);
                break;
            }
            _ => {}
        }
    }
    let refused = (
        embedded().await,
        sent(&server, texts[0]).await,
        sent(&server, texts[1]).await,
    );
    // Let the write be before asserting: a label left behind would refuse later passes.
    store.run(label("REMOVE")).await.expect("let the write be");
    assert!(refusal.is_some(), "no pass's write was refused");
    assert_eq!(refused, (0, 1, 1), "nothing stored, each text sent once");

    let stored = settle(
        60,
        || async {
            let _ = turn_index::run_once(&store, Some(&embedder), &holder).await;
            embedded().await
        },
        |n| *n == 2,
    )
    .await;
    // The refused pass held other projects' sessions too: what is still kept of them goes,
    // so the tests counting their own texts' embeddings count every one.
    cairn::recall::unstored::UNSTORED.clear();
    assert_eq!(stored, 2, "both stored once Neo4j takes the write");
    // Stored as made: neither text was embedded again.
    assert_eq!(sent(&server, texts[0]).await, 1);
    assert_eq!(sent(&server, texts[1]).await, 1);
}

/// The search texts of the project's operations with at least this many characters.
/// The ids of the turns `query` finds by its words.
async fn found_by_words(app: &TestApp, query: &str) -> Vec<String> {
    let (status, answer) = turn_search(app, json!({"project": app.project, "query": query})).await;
    assert_eq!(status, 200, "{answer}");
    answer["operations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| matches!(o["matched_by"].as_str(), Some("fulltext" | "both")))
        .filter_map(|o| o["operation_id"].as_str().map(str::to_string))
        .collect()
}

/// Code names its things `token_store.rs`, `parseConfig`, `SessionRegistry`: the index's
/// tokenizer keeps each whole, and they are found by their words all the same — in a turn,
/// a tool call, a decision and a memory, and again after an upgrade parts the texts an older
/// cairn stored without their identifiers' parts.
#[tokio::test]
async fn identifiers_are_found_by_their_words() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (moved, grep) = (format!("{sid}-moved"), format!("{sid}-grep"));
    app.ops_sync(
        &sid,
        json!([
            {"id": moved, "type": "message", "role": "assistant", "summary": "moved",
             "content": "Moved the expiry check into src/auth/token_store.rs and renamed parseConfig."},
            {"id": grep, "type": "tool_call", "tool": "Bash", "target": "rg SessionRegistry lib/",
             "summary": "3 matches", "status": "ok"},
            {"id": format!("{sid}-other"), "type": "message", "role": "user", "summary": "other",
             "content": "the shop opens at nine; a token of thanks for the team"}
        ]),
    )
    .await;
    decided_and_learnt(
        &app,
        &sid,
        json!({"subject": "retry policy", "choice": "honour the retry_after header",
               "rationale": "the API says when"}),
        "lazy_html is only a test dependency",
    )
    .await;

    let first = |query: &'static str| {
        let app = &app;
        async move {
            settle(
                60,
                || found_by_words(app, query),
                |ids: &Vec<String>| !ids.is_empty(),
            )
            .await
        }
    };
    for query in ["token store", "token_store", "tokenStore", "parse config"] {
        assert_eq!(first(query).await.first(), Some(&moved), "{query}");
    }
    assert_eq!(first("session registry").await, std::slice::from_ref(&grep));
    let decision = first("retry after").await;
    assert_eq!(decision.len(), 1, "{decision:?}");
    let memory = first("lazy html").await;
    assert_eq!(memory.len(), 1, "{memory:?}");

    // As an older cairn stored them: texts without their identifiers' parts.
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (n) WHERE (n:Operation OR n:Memory) AND n.project = $project \
                 REMOVE n.search_parts",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("parts removed");
    let gone = settle(
        60,
        || found_by_words(&app, "session registry"),
        |ids: &Vec<String>| ids.is_empty(),
    )
    .await;
    assert!(gone.is_empty(), "only the parts found it: {gone:?}");
    let mut pass = turn_index::Retexting::pass(cairn::domain::turn_text::MAX_CHARS);
    while !pass.done {
        pass.step(&crate::helpers::store())
            .await
            .expect("parting step");
    }
    assert_eq!(first("session registry").await, [grep]);
    assert_eq!(first("parse config").await.first(), Some(&moved));
    assert_eq!(first("lazy html").await, memory);
}

async fn texts_longer_than(app: &TestApp, chars: usize) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
        text: String,
    }
    let rows: Vec<Row> = crate::helpers::store()
        .fetch(
            neo4rs::query(
                "MATCH (o:Operation {project: $project}) WHERE size(o.search_text) >= $chars \
                 RETURN o.id AS id, o.search_text AS text ORDER BY id",
            )
            .param("project", app.project.as_str())
            .param("chars", chars as i64),
        )
        .await
        .expect("long texts");
    rows.into_iter().map(|r| (r.id, r.text)).collect()
}

/// Texts stored while the bound was 2,000 characters are made whole by the upgrade's pass:
/// an operation's from its own fields, a decision's from the decision it records. Their
/// closing words find them again, and the operations are embedded again from the whole text.
#[tokio::test]
async fn texts_cut_at_an_older_bound_are_made_whole_and_embedded_again() {
    let (server, app, _turn) = fake_embeddings().await;
    let sid = app.session().await;
    let report: String = (0..40)
        .map(|i| format!("The quarterly report covered the build servers in week {i}. "))
        .collect();
    let content = format!("{report}Finally: the zeppelin hangar keys are kept by Ottoline.");
    let rationale = format!("{report}Ottoline wants the zeppelin keys locked away.");
    let bound = turn_index::FIRST_TEXT_BOUND;
    assert!(content.chars().count() > bound && rationale.chars().count() > bound);
    let long = format!("{sid}-long");
    app.ops_sync(
        &sid,
        json!([{"id": long, "type": "message", "role": "assistant", "summary": "report",
                "content": content}]),
    )
    .await;
    let (status, answer) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": sid, "subject": "hangar keys",
                    "choice": "blue cabinet", "rationale": rationale}),
        )
        .await;
    assert!((200..300).contains(&status), "{answer}");
    let body = json!({"project": app.project, "query": "zeppelin Ottoline"});
    until_embedded(&app, &body, &long).await;
    let whole = texts_longer_than(&app, bound).await;
    assert_eq!(whole.len(), 2, "the turn and the decision: {whole:?}");
    let embedded_whole = sent(&server, &content).await;
    assert!(embedded_whole >= 1);

    // As a cairn that cut texts at 2,000 characters stored them.
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (o:Operation {project: $project}) WHERE size(o.search_text) > $bound \
                 SET o.search_text = left(o.search_text, $bound)",
            )
            .param("project", app.project.as_str())
            .param("bound", bound as i64),
        )
        .await
        .expect("cut the texts");
    assert!(texts_longer_than(&app, bound + 1).await.is_empty());
    let by_words = |a: &Value, id: &str| matches!(matched(a, id), Some("fulltext" | "both"));
    let found = |a: &Value| -> Vec<String> {
        a["operations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| matches!(o["matched_by"].as_str(), Some("fulltext" | "both")))
            .filter_map(|o| o["operation_id"].as_str().map(str::to_string))
            .collect()
    };
    let cut = settle(
        60,
        || async { turn_search(&app, body.clone()).await.1 },
        |a: &Value| found(a).is_empty(),
    )
    .await;
    assert!(
        found(&cut).is_empty(),
        "closing words are not indexed: {cut}"
    );

    let mut pass = turn_index::Retexting::pass(bound);
    while !pass.done {
        pass.step(&crate::helpers::store())
            .await
            .expect("re-texting step");
    }
    assert!(pass.scanned >= 2, "{pass:?}");
    assert_eq!(
        texts_longer_than(&app, bound).await,
        whole,
        "made whole, as first stored"
    );
    let decision_op = whole
        .iter()
        .find(|(id, _)| *id != long)
        .map(|(id, _)| id.clone())
        .expect("the decision's operation");
    // A pass that read the cut text before the texts were made whole, writing after: its
    // vector, its passages and its cursor land nowhere (the session was reset meanwhile),
    // where the vector of the cut text stood as the turn's own and the cursor moved past it.
    let stale: Vec<f32> = (0..384).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
    let store = crate::helpers::store();
    let model = "remote:fake#unlabelled";
    #[derive(serde::Deserialize)]
    struct At {
        seq: i64,
        last: i64,
    }
    let at: At = store
        .fetch_one(
            neo4rs::query(
                "MATCH (s:Session {id: $sid}) \
                 RETURN coalesce(s.turns_seq, 0) AS seq, s.last_seq AS last",
            )
            .param("sid", sid.as_str()),
        )
        .await
        .expect("the cursor")
        .expect("the session");
    use cairn::graph::turns::{Cursor, PassageWrite, TurnWrite};
    let write = [TurnWrite {
        id: long.clone(),
        text: None,
        parts: None,
        vector: Some(stale.clone()),
        resets: 0,
    }];
    cairn::graph::turns::store_turns(&store, model, 384, &write)
        .await
        .expect("a stale vector");
    let passages = [PassageWrite {
        id: long.clone(),
        vectors: vec![stale.clone(), stale.clone()],
        resets: 0,
    }];
    cairn::graph::turns::store_passages(&store, model, 384, &passages)
        .await
        .expect("stale passages");
    let cursor = [Cursor {
        id: &sid,
        project: &app.project,
        from: at.seq,
        seq: at.last,
        resets: 0,
    }];
    cairn::graph::turns::advance(&store, model, "test", &cursor)
        .await
        .expect("a stale cursor");
    let answer = settle(
        180,
        || async {
            retry_now(&app).await;
            turn_search(&app, body.clone()).await.1
        },
        |a: &Value| a["pending_embeddings"] == 0 && by_words(a, &long) && by_words(a, &decision_op),
    )
    .await;
    assert!(by_words(&answer, &long), "{answer}");
    assert!(by_words(&answer, &decision_op), "{answer}");
    assert_eq!(answer["pending_embeddings"], 0, "{answer}");
    assert!(
        sent(&server, &content).await > embedded_whole,
        "the turn is embedded again from its whole text"
    );
    #[derive(serde::Deserialize)]
    struct Count {
        n: i64,
    }
    let stale_left: Count = store
        .fetch_one(
            neo4rs::query(
                "MATCH (o:Operation {id: $id}) \
                 RETURN size([v IN [o.embedding] + COLLECT { \
                   MATCH (p:Passage {operation_id: $id}) RETURN p.embedding } \
                   WHERE v[0] = 1.0 AND v[1] = 0.0]) AS n",
            )
            .param("id", long.as_str()),
        )
        .await
        .expect("the vectors")
        .expect("the operation");
    assert_eq!(stale_left.n, 0, "the stale pass's vectors are not kept");
    let snippet = answer["operations"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["operation_id"] == long.as_str())
        .and_then(|o| o["snippet"].as_str())
        .unwrap_or_default();
    assert!(snippet.contains("zeppelin hangar keys"), "{snippet}");
}

/// Everything with an embeddings endpoint in one test (the indexer is global): vectors are
/// made in the background with their model recorded, meaning finds what words miss, and
/// vectors of another model are never compared but re-embedded.
/// Two turns of session `sid`: `{sid}-login` about signing in, `{sid}-backup` about backups.
fn login_and_backup(sid: &str) -> [Value; 2] {
    [
        json!({"id": format!("{sid}-login"), "type": "message", "role": "user", "summary": "s",
               "content": "the login form rejects valid passwords"}),
        json!({"id": format!("{sid}-backup"), "type": "message", "role": "user", "summary": "s",
               "content": "the nightly backup job is sluggish"}),
    ]
}

#[tokio::test]
async fn vectors_find_by_meaning_and_never_mix_models() {
    // While set, texts of this conversation cannot be embedded (queries still can).
    let (_server, refuse, app, _turn) = refusing_embeddings("passwords").await;
    let sid = app.session().await;
    let login = format!("{sid}-login");
    let [said, backup] = login_and_backup(&sid);
    app.ops_sync(
        &sid,
        json!([said, backup,
            {"type": "read", "target": "src/form.rs", "summary": "read", "files_read": ["src/form.rs"]}
        ]),
    )
    .await;
    let body = json!({"project": app.project, "query": "signin credentials trouble"});
    let answer = until_embedded(&app, &body, &login).await;
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    // No shared word: only meaning found it.
    assert_eq!(matched(&answer, &login), Some("vector"), "{answer}");
    assert_eq!(
        answer["operations"][0]["operation_id"],
        login.as_str(),
        "{answer}"
    );
    // A time named: the sessions active today add their nearest operations to the vector
    // list, each operation still once.
    let (status, answer) = turn_search(
        &app,
        json!({"project": app.project, "query": "signin credentials trouble today"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["operations"][0]["operation_id"],
        login.as_str(),
        "{answer}"
    );
    let ids: Vec<&str> = answer["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["operation_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.len(),
        ids.iter().collect::<std::collections::HashSet<_>>().len(),
        "{answer}"
    );
    // Both turns with text carry a vector of the configured model; the read has none.
    assert_eq!(embedded_by(&app, "remote:fake#unlabelled").await, 2);
    // Each vector is stored with its signature.
    let stored = signatures(&app).await;
    assert_eq!(stored.len(), 2);
    for v in &stored {
        assert_eq!(v.sig, signature::of(&v.vector), "{}", v.id);
    }
    // Vectors stored without one (as before signatures were kept) are read whole for
    // diversity: the same answer, then signed again by a pass over the operations.
    let before = turn_search(
        &app,
        json!({"project": app.project, "query": "login passwords", "limit": 1}),
    )
    .await
    .1;
    unsign(&app).await;
    let after = turn_search(
        &app,
        json!({"project": app.project, "query": "login passwords", "limit": 1}),
    )
    .await
    .1;
    assert_eq!(
        before["operations"], after["operations"],
        "{before}\n{after}"
    );
    assert_eq!(
        after["operations"].as_array().map(Vec::len),
        Some(1),
        "{after}"
    );
    let mut signing = turn_index::Signing::pass();
    while !signing.done {
        signing
            .step(&crate::helpers::store())
            .await
            .expect("signing step");
    }
    assert!(signing.scanned >= 3, "{signing:?}");
    for v in &signatures(&app).await {
        assert_eq!(v.sig, signature::of(&v.vector), "{}", v.id);
    }
    let (_, answer) = turn_search(
        &app,
        json!({"project": app.project, "query": "login passwords"}),
    )
    .await;
    assert_eq!(matched(&answer, &login), Some("both"), "{answer}");

    // The vectors now say another model made them (as after switching models): they are
    // never compared with this model's query, and are re-embedded in the background.
    refuse.store(true, Ordering::SeqCst);
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (o:Operation {project: $project}) WHERE o.embedding IS NOT NULL \
                 SET o.embedding_model = 'old-model'",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("age the vectors");
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {project: $project}) SET s.turns_model = 'old-model', s.turns_pending = true",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("queue the sessions");
    let (status, answer) = turn_search(&app, body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    assert_eq!(matched(&answer, &login), None, "{answer}");
    // Meanwhile the words still find it.
    let (_, answer) = turn_search(
        &app,
        json!({"project": app.project, "query": "login passwords"}),
    )
    .await;
    assert_eq!(matched(&answer, &login), Some("fulltext"), "{answer}");

    refuse.store(false, Ordering::SeqCst);
    let answer = until_embedded(&app, &body, &login).await;
    assert_eq!(matched(&answer, &login), Some("vector"), "{answer}");
    assert_eq!(embedded_by(&app, "remote:fake#unlabelled").await, 2);
    assert_eq!(embedded_by(&app, "old-model").await, 0);
    app.stop().await;
}

/// A turn captured while the indexer is behind (or after a switch of models) has no vector of
/// the configured model yet: it is ranked by its words, not at half the score of the turns
/// embedded already, so a project's newest work is not found last while the index catches up.
/// A search for something the project never held finds nothing, turns or sessions, rather
/// than its nearest strangers; what holds a word of the query or comes close in meaning is
/// still found, and so is a session holding a turn close in meaning, however far the
/// session's own vector.
#[tokio::test]
async fn a_query_about_nothing_held_finds_nothing() {
    let (_server, app, _turn) = fake_embeddings().await;
    let sid = app.session().await;
    let login = format!("{sid}-login");
    app.ops_sync(&sid, json!(login_and_backup(&sid))).await;
    let body = json!({"project": app.project, "query": "signin credentials trouble"});
    let answer = until_embedded(&app, &body, &login).await;
    assert_eq!(matched(&answer, &login), Some("vector"), "{answer}");
    for query in ["xqzv blorf wumpf", "kubernetes rollout", "!!! ???"] {
        let (status, answer) =
            turn_search(&app, json!({"project": app.project, "query": query})).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["mode"], "hybrid", "{answer}");
        assert_eq!(answer["operations"], json!([]), "{query}: {answer}");
        let (status, answer) = app
            .post(
                "/v1/sessions/search",
                &json!({"project": app.project, "query": query}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["sessions"], json!([]), "{query}: {answer}");
    }
    // A word of the query is enough.
    let answer = turn_search(
        &app,
        json!({"project": app.project, "query": "xqzv backup"}),
    )
    .await
    .1;
    assert_eq!(
        answer["operations"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    assert_eq!(
        matched(&answer, &format!("{sid}-backup")),
        Some("both"),
        "{answer}"
    );
    // The session too, by its meaning, once its document is embedded.
    let body = json!({"project": app.project, "query": "signin credentials trouble"});
    let answer = settle(
        120,
        || async { app.post("/v1/sessions/search", &body).await.1 },
        |a: &Value| {
            a["mode"] == "hybrid" && a["sessions"].as_array().is_some_and(|s| !s.is_empty())
        },
    )
    .await;
    assert_eq!(
        answer["sessions"][0]["session_id"],
        sid.as_str(),
        "{answer}"
    );
    // A long session whose own vector lies far from the query (its document is mostly about
    // something else) is found by the turn in it that is close in meaning.
    let long = app.session().await;
    let mut said: Vec<Value> = (0..20)
        .map(|i| {
            json!({"type": "message", "role": "user", "summary": "s",
                   "content": format!("walk {i}: we counted the boats along the harbour in the fog")})
        })
        .collect();
    said.push(
        json!({"id": format!("{long}-auth"), "type": "message", "role": "user",
                     "summary": "s", "content": "authentication keeps failing for some users"}),
    );
    app.ops_sync(&long, json!(said)).await;
    let lists_long = |a: &Value| {
        a["sessions"]
            .as_array()
            .is_some_and(|s| s.iter().any(|h| h["session_id"] == long.as_str()))
    };
    let answer = settle(
        120,
        || async {
            retry_now(&app).await;
            app.post("/v1/sessions/search", &body).await.1
        },
        lists_long,
    )
    .await;
    assert!(lists_long(&answer), "{answer}");
    let turns = turn_search(&app, body.clone()).await.1;
    assert_eq!(
        matched(&turns, &format!("{long}-auth")),
        Some("vector"),
        "{turns}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_turn_waiting_for_its_vector_ranks_by_its_words_meanwhile() {
    // Texts of the new turn cannot be embedded (queries still can).
    let (_server, refuse, app, _turn) = refusing_embeddings("parallel").await;
    // The embedded turn on its own in its session, so that no neighbour lifts it.
    let older = app.session().await;
    let partly = format!("{older}-partly");
    app.ops_sync(
        &older,
        json!([{"id": partly, "type": "message", "role": "user", "summary": "s",
                "content": "the nightly backup restore is slow"}]),
    )
    .await;
    let other = app.session().await;
    app.ops_sync(
        &other,
        json!([
            {"type": "message", "role": "assistant", "summary": "s",
             "content": "the restore reads one table at a time"},
            {"type": "message", "role": "user", "summary": "s",
             "content": "the login form rejects valid passwords"}
        ]),
    )
    .await;
    let query = "nightly backup restore snapshots";
    let body = json!({"project": app.project, "query": query});
    let answer = until_embedded(&app, &body, &partly).await;
    assert_eq!(matched(&answer, &partly), Some("both"), "{answer}");

    refuse.store(true, Ordering::SeqCst);
    let newer = app.session().await;
    let waiting = format!("{newer}-waiting");
    app.ops_sync(
        &newer,
        json!([{"id": waiting, "type": "message", "role": "user", "summary": "s",
                "content": "the nightly backup restore now reads snapshots in parallel"}]),
    )
    .await;
    let answer = search_until(&app, body.clone(), |ops| {
        ops.iter().any(|o| o["operation_id"] == waiting.as_str())
    })
    .await;
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    assert_eq!(matched(&answer, &waiting), Some("fulltext"), "{answer}");
    // It holds every word of the query, the embedded turn three of them.
    let first = &answer["operations"][0];
    assert_eq!(first["operation_id"], waiting.as_str(), "{answer}");
    let score = |id: &str| {
        answer["operations"]
            .as_array()
            .and_then(|ops| ops.iter().find(|o| o["operation_id"] == id))
            .and_then(|o| o["score"].as_f64())
            .unwrap_or_default()
    };
    assert!(score(&waiting) > score(&partly), "{answer}");
    app.stop().await;
}

#[tokio::test]
async fn cairn_search_prints_the_turns_found() {
    let app = TestApp::spawn().await;
    let sid = conversation(&app).await;
    search_until(
        &app,
        json!({"project": app.project, "query": "fixed daily lifetime", "types": ["decision"]}),
        |ops| !ops.is_empty(),
    )
    .await;
    let key = crate::helpers::mint_key(&app.project, "read").await;
    let run = |extra: &[&str]| {
        let mut argv = vec![
            "cairn".to_string(),
            "search".into(),
            "--url".into(),
            app.addr.clone(),
            "--api-key".into(),
            key.clone(),
            "--project".into(),
            app.project.clone(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        async move {
            let cli = cairn::cli::Cli::try_parse_from(&argv).expect("search arguments");
            let cairn::cli::Command::Search(args) = cli.command else {
                panic!("not the search command");
            };
            let mut out = Vec::new();
            let code = cairn::cli::search::run(args, &mut out).await;
            (
                code.map_err(|e| e.to_string()),
                String::from_utf8(out).unwrap(),
            )
        }
    };
    let (code, text) = run(&["--type", "decision", "fixed", "daily", "lifetime"]).await;
    assert_eq!(code, Ok(0), "{text}");
    assert!(
        text.starts_with(&format!("1. decision — session {sid} #6 — ")),
        "{text}"
    );
    assert!(
        text.contains("rejected: fixed daily lifetime, never expire"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("mode: fulltext"), "{text}");
    // A refused request is an error naming the stable code.
    let (code, _) = run(&["--type", "bogus", "x"]).await;
    assert!(code.unwrap_err().contains("invalid_types"));
}

/// A session whose failed embedding comes due again is queued by when it came due, not behind
/// every session never tried: a backlog (a model switch, a bulk import) cannot starve it.
#[tokio::test]
async fn a_failed_session_due_again_is_not_starved_by_a_backlog() {
    crate::helpers::schema_once().await;
    let store = crate::helpers::store();
    let project = format!("turn-queue-{}", uuid::Uuid::new_v4().simple());
    let now = cairn::graph::now_ms();
    let rows = json!([
        // Failed twice, due again now; its last activity is the oldest.
        {"id": "failed", "active": now - 600_000, "attempts": 2, "retry": now - 1},
        // A backlog never tried, with activity after the failed one's.
        {"id": "backlog-1", "active": now - 60_000, "attempts": 0, "retry": null},
        {"id": "backlog-2", "active": now - 120_000, "attempts": 0, "retry": null},
        // Failed, not due yet: not offered.
        {"id": "waiting", "active": now, "attempts": 1, "retry": now + 3_600_000},
    ]);
    store
        .run(
            neo4rs::query(
                "UNWIND $rows AS r
                 CREATE (:Session {id: $project + '-' + r.id, project: $project, last_seq: 0,
                                   turns_pending: true, last_activity_at: r.active,
                                   turns_attempts: r.attempts, turns_retry_at: r.retry})",
            )
            .param("project", project.as_str())
            .param("rows", cairn::graph::param(&rows).unwrap()),
        )
        .await
        .expect("sessions");
    let work = cairn::graph::turns::work(&store, "m", "test", 2_000, 1).await;
    cairn::graph::purge::project_now(&store, &project)
        .await
        .expect("purge");
    let prefix = format!("{project}-");
    let order: Vec<String> = work
        .unwrap()
        .into_iter()
        .filter(|s| s.project == project)
        .map(|s| s.id.trim_start_matches(&prefix).to_string())
        .collect();
    assert_eq!(order, ["failed", "backlog-1", "backlog-2"]);
}

/// Projects take turns in the turn indexer's queue: a small project's session is not held up
/// behind a large project's newer backlog.
#[tokio::test]
async fn projects_take_turns_in_the_turn_indexers_queue() {
    let (big, small) = crate::helpers::two_projects_queued("turn", "turns_pending: true").await;
    let work = cairn::graph::turns::work(&crate::helpers::store(), "m", "test", 2_000, 1)
        .await
        .expect("work");
    let answer = work.into_iter().map(|s| (s.project, s.id)).collect();
    let order = crate::helpers::queue_order(&big, &small, answer).await;
    assert_eq!(order, ["b1", "s1", "b2", "b3"]);
}

/// Words weigh by how rare they are in the project searched, not in the whole database: a
/// name on every turn of this project (and nowhere else) does not outrank the words that
/// answer, however common those are in another project.
#[tokio::test]
async fn words_weigh_by_the_project_searched_not_the_whole_database() {
    let (app, other) = tokio::join!(TestApp::spawn(), TestApp::spawn());
    let name = format!("zed{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    // Elsewhere the answer's words are everywhere.
    let sid = other.session().await;
    let chatter: Vec<Value> = (0..40)
        .map(|i| {
            json!({"id": format!("{sid}-{i}"), "type": "message", "role": "user",
                   "summary": "x", "content": format!("ledger migration number {i} went fine")})
        })
        .collect();
    other.ops_sync(&sid, Value::Array(chatter)).await;
    // Here the name is on every turn, twice on most.
    let sid = app.session().await;
    let mut turns: Vec<Value> = [
        "good morning, {n} here",
        "{n} says hi again",
        "lunch was fine, said {n}",
        "{n} thinks the coffee is cold",
        "{n} will call {n}'s sister",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| {
        json!({"id": format!("{sid}-{i}"), "type": "message", "role": "user", "summary": "x",
               "content": format!("{name}: {}", t.replace("{n}", &name))})
    })
    .collect();
    let answer = format!("{sid}-answer");
    turns.push(
        json!({"id": answer, "type": "message", "role": "assistant", "summary": "x",
                      "content": format!("{name}: the ledger migration stopped at step three")}),
    );
    app.ops_sync(&sid, Value::Array(turns)).await;
    let query = format!("What did {name} say about the ledger migration?");
    let found = search_until(
        &app,
        json!({"project": app.project, "query": query, "limit": 10}),
        // Every turn indexed (the index is eventually consistent).
        |ops| ops.len() >= 6,
    )
    .await;
    assert_eq!(
        found["operations"][0]["operation_id"],
        answer.as_str(),
        "{found}"
    );
    // The statistics are the project's: the other project's forty ledger turns do not count.
    let term = |word: &str| cairn::graph::turns::TermQuery {
        word: word.to_string(),
        query: format!("+project:\"{}\" +search_text:({word})", app.project),
    };
    let docs = cairn::graph::turns::project_size(&crate::helpers::store(), &app.project)
        .await
        .expect("project size");
    let counts = cairn::graph::turns::term_counts(
        &crate::helpers::store(),
        &app.project,
        &[term(&name), term("ledger")],
        1_000,
    )
    .await
    .expect("term counts");
    assert!(docs >= 6, "{docs}");
    let counts: std::collections::HashMap<String, usize> = counts.into_iter().collect();
    assert_eq!(counts[&name], 6, "{counts:?}");
    assert_eq!(counts["ledger"], 1, "{counts:?}");
}

/// The passes a server makes over every session when it starts (an upgrade, another
/// embedding model) go a page at a time: a pass reaches every session of more than one page,
/// each once, and the real passes queue what is out of date and leave the rest alone.
#[tokio::test]
async fn start_up_passes_reach_every_session_a_page_at_a_time() {
    crate::helpers::schema_once().await;
    let store = crate::helpers::store();
    let project = format!("test-pages-{}", uuid::Uuid::new_v4().simple());
    store
        .run(
            neo4rs::query(
                "UNWIND range(1, 1203) AS i
                 CREATE (:Session {id: $project + '-old-' + i, project: $project, last_seq: 2,
                                   status: 'closed', started_at: 0, last_activity_at: 0,
                                   turns_model: 'old-model-' + (i % 3)})
                 WITH count(*) AS made
                 UNWIND range(1, 3) AS i
                 CREATE (:Session {id: $project + '-new-' + i, project: $project, last_seq: 2,
                                   status: 'closed', started_at: 0, last_activity_at: 0,
                                   search_rev: 1, turns_text_seq: 2, turns_model: ''})",
            )
            .param("project", project.as_str()),
        )
        .await
        .expect("sessions from before");
    // A pass of this project's sessions alone, so its sums are exact.
    let pass = cairn::graph::sessions::in_pages(&store, || {
        neo4rs::query(
            "MATCH (s:Session) WHERE s.id > $after AND s.project = $project
             WITH s ORDER BY s.id LIMIT $page
             WITH s, s.id CONTAINS '-old-' AS old
             FOREACH (_ IN CASE WHEN old THEN [1] ELSE [] END | SET s.visits = coalesce(s.visits, 0) + 1)
             RETURN max(s.id) AS last, count(s) AS scanned,
                    sum(CASE WHEN old THEN 1 ELSE 0 END) AS sessions,
                    sum(CASE WHEN old THEN s.last_seq ELSE 0 END) AS operations,
                    collect(DISTINCT CASE WHEN old THEN s.turns_model END) AS models",
        )
        .param("project", project.as_str())
    })
    .await
    .expect("a paged pass");
    assert_eq!((pass.sessions, pass.operations), (1203, 2406));
    let models: Vec<&str> = pass.models.iter().map(String::as_str).collect();
    assert_eq!(models, ["old-model-0", "old-model-1", "old-model-2"]);
    let n = |cond: &str| {
        format!("MATCH (s:Session {{project: $project}}) WHERE {cond} RETURN count(s) AS n")
    };
    assert_eq!(count(&n("s.visits = 1"), &project).await, 1203);

    // The real passes, without another model (they span the database, whose other sessions
    // belong to tests running beside this one, and a server starting beside this test makes
    // the same passes, so what each call counts is not this test's to know): the sessions
    // from before end up queued, or done by an indexer since; those with a document are not
    // marked again (whether they are queued for turns depends on the models of the servers
    // beside this test).
    cairn::graph::turns::backfill(&store, "")
        .await
        .expect("turn backfill");
    cairn::graph::search::backfill(&store).await.expect("docs");
    let old = "s.id CONTAINS '-old-' AND";
    let turns = n(&format!(
        "{old} (s.turns_pending OR s.turns_text_seq IS NOT NULL)"
    ));
    assert_eq!(count(&turns, &project).await, 1203);
    assert_eq!(
        count(&n(&format!("{old} s.search_rev = 1")), &project).await,
        1203
    );
    let fresh = n("s.id CONTAINS '-new-' AND coalesce(s.search_dirty, false)");
    assert_eq!(count(&fresh, &project).await, 0);
}

/// A session holding one turn about the cache backend, said at `at`.
async fn said_at(app: &TestApp, text: &str, at: chrono::DateTime<chrono::Utc>) -> String {
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([{"id": format!("{sid}-m"), "type": "message", "role": "user",
                "content": text, "at": at.to_rfc3339()}]),
    )
    .await;
    sid
}

/// The sessions active in a span of time are those that ended in it or after it and began
/// before its end, the first to end first, at most the limit: what a search naming that time
/// scans beside its project-wide lists.
#[tokio::test]
async fn the_sessions_of_a_time_are_those_active_then_the_first_to_end_first() {
    use cairn::graph::turns::sessions_in_time;
    let app = TestApp::spawn().await;
    let now = chrono::Utc::now();
    let days_ago = |d: i64| now - chrono::Duration::days(d);
    // One turn a day, 1 to 10 days ago: by_day[d - 1] is the session of d days ago.
    let mut by_day = Vec::new();
    for d in 1..=10 {
        by_day.push(said_at(&app, &format!("the note of day {d}"), days_ago(d)).await);
    }
    // A long session: begun 20 days ago, active until yesterday.
    let long = app.session().await;
    app.ops_sync(
        &long,
        json!([
            {"id": format!("{long}-a"), "type": "message", "role": "user",
             "content": "a long piece of work begins", "at": days_ago(20).to_rfc3339()},
            {"id": format!("{long}-b"), "type": "message", "role": "user",
             "content": "and goes on", "at": (days_ago(1) + chrono::Duration::hours(6)).to_rfc3339()}
        ]),
    )
    .await;
    let store = crate::helpers::store();
    // From 8.5 to 2.5 days ago: the sessions of days 8 to 3, then the long one; those of
    // days 1 and 2 began after the span, those of days 9 and 10 ended before it.
    let (from, to) = (
        (now - chrono::Duration::hours(8 * 24 + 12)).timestamp_millis(),
        (now - chrono::Duration::hours(2 * 24 + 12)).timestamp_millis(),
    );
    let all = sessions_in_time(&store, &app.project, from, to, 10)
        .await
        .unwrap();
    let mut want: Vec<String> = (3..=8).rev().map(|d| by_day[d - 1].clone()).collect();
    want.push(long.clone());
    assert_eq!(all, want);
    let first = sessions_in_time(&store, &app.project, from, to, 3)
        .await
        .unwrap();
    assert_eq!(first, want[..3]);
    // A span before every session holds none.
    let before = days_ago(40).timestamp_millis();
    let none = sessions_in_time(&store, &app.project, before - 1_000, before, 10)
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    app.stop().await;
}

/// The sessions of the hits of `query`, best first, once each settled on `first`.
async fn first_session_of(app: &TestApp, query: &str, first: &str) -> Value {
    search_until(
        app,
        json!({"project": app.project, "query": query, "limit": 5}),
        |ops| ops.len() == 2 && ops[0]["session_id"] == first,
    )
    .await
}

/// Two sessions alike in words, choosing a cache backend: on 3 March 2025 (Redis) and on 10
/// June 2025 (memcached); their ids, March's first.
async fn two_cache_choices(app: &TestApp) -> (String, String) {
    let day = |y, m, d| {
        chrono::NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(15, 30, 0)
            .unwrap()
            .and_utc()
    };
    let march = said_at(app, "we chose Redis for the cache backend", day(2025, 3, 3)).await;
    let june = said_at(
        app,
        "we chose memcached for the cache backend",
        day(2025, 6, 10),
    )
    .await;
    (march, june)
}

#[tokio::test]
async fn a_time_the_query_names_ranks_what_happened_then_first() {
    let app = TestApp::spawn().await;
    // The June one is newer, so it ranks first when no time is named.
    let (march, june) = two_cache_choices(&app).await;
    let answer = first_session_of(&app, "which cache backend did we choose", &june).await;
    assert_eq!(
        answer["operations"][0]["session_id"],
        june.as_str(),
        "{answer}"
    );

    for (query, first) in [
        (
            "which cache backend did we choose on 3 March, 2025?",
            &march,
        ),
        (
            "which cache backend did we choose on March 3rd 2025?",
            &march,
        ),
        ("which cache backend did we choose in March 2025?", &march),
        ("which cache backend did we choose on 2025-06-10?", &june),
    ] {
        let answer = first_session_of(&app, query, first).await;
        assert_eq!(
            answer["operations"][0]["session_id"],
            first.as_str(),
            "{query}: {answer}"
        );
    }
    // Session search ranks the session of that day first too.
    let (status, found) = app
        .post(
            "/v1/sessions/search",
            &json!({"project": app.project, "query": "which cache backend did we choose on 3 March 2025", "limit": 5}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["sessions"][0]["session_id"],
        march.as_str(),
        "{found}"
    );

    // Times counted back from now: the older of two turns, when the query names its day.
    let now = chrono::Utc::now();
    let other = TestApp::spawn().await;
    let older = said_at(
        &other,
        "the flaky login test was fixed",
        now - chrono::Duration::days(3),
    )
    .await;
    let newer = said_at(
        &other,
        "the flaky login test was fixed",
        now - chrono::Duration::days(1),
    )
    .await;
    first_session_of(&other, "was the flaky login test fixed", &newer).await;
    let answer =
        first_session_of(&other, "was the flaky login test fixed 3 days ago", &older).await;
    assert_eq!(
        answer["operations"][0]["session_id"],
        older.as_str(),
        "{answer}"
    );
    app.stop().await;
    other.stop().await;
}

#[tokio::test]
async fn a_summary_stands_at_the_work_it_recaps_not_at_its_close() {
    let app = TestApp::spawn().await;
    let said = "we moved the cache backend to Redis";
    // Imported work from long ago, closed (and so summed up) today.
    let old = chrono::Utc::now() - chrono::Duration::days(400);
    let imported = said_at(&app, "what about the cache backend?", old).await;
    let (status, body) = app
        .post(
            &format!("/v1/sessions/{imported}/close"),
            &json!({"summary": said}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // The same words said yesterday.
    let recent = said_at(&app, said, chrono::Utc::now() - chrono::Duration::days(1)).await;

    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "cache backend Redis", "limit": 5}),
        |ops| ops.iter().any(|o| o["type"] == "summary") && ops.len() >= 3,
    )
    .await;
    let ops = answer["operations"].as_array().unwrap();
    let summary = ops.iter().find(|o| o["type"] == "summary").unwrap();
    assert_eq!(summary["session_id"], imported.as_str(), "{answer}");
    assert_eq!(
        summary["at"].as_i64().unwrap(),
        old.timestamp_millis(),
        "{answer}"
    );
    assert_eq!(ops[0]["session_id"], recent.as_str(), "{answer}");
    app.stop().await;
}

#[tokio::test]
async fn a_long_last_turn_is_found_whole_not_as_the_summary_cut_from_it() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    // A last assistant turn longer than a summary: closed without one, the session is summed
    // up by the turn's first few hundred tokens.
    let reply: String = (0..60)
        .map(|i| format!("Step {i} of the marmalade bottling plan keeps the jars sterile. "))
        .collect();
    let reply = format!("{reply}Last: label every jar with the quince harvest date.");
    let last = format!("{sid}-reply");
    app.ops_sync(
        &sid,
        json!([
            {"type": "message", "role": "user", "content": "how do I bottle the marmalade?"},
            {"id": last, "type": "message", "role": "assistant", "content": reply}
        ]),
    )
    .await;
    let (status, body) = app
        .post(&format!("/v1/sessions/{sid}/close"), &json!({}))
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let summary = app
        .get_when(&format!("/v1/sessions/{sid}"), |s| s["summary"].is_string())
        .await["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        summary.ends_with('…') && reply.starts_with(summary.trim_end_matches('…')),
        "{summary}"
    );
    let query = "marmalade bottling plan sterile jars";
    // The summary is searchable on its own ...
    search_until(
        &app,
        json!({"project": app.project, "query": query, "types": ["summary"]}),
        |ops| ops.iter().any(|o| o["session_id"] == sid.as_str()),
    )
    .await;
    // ... but beside the turn it was cut from, the whole turn stands for both.
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": query, "limit": 10}),
        |ops| ops.iter().any(|o| o["operation_id"] == last.as_str()),
    )
    .await;
    let ops = answer["operations"].as_array().unwrap();
    assert!(
        ops.iter().all(|o| o["type"] != "summary"),
        "the summary repeats the turn: {answer}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_question_asked_at_a_past_moment_counts_its_times_back_from_then() {
    let app = TestApp::spawn().await;
    let (march, june) = two_cache_choices(&app).await;
    let query = "which cache backend did we choose three months ago?";
    // Asked now, three months ago holds neither: the newer ranks first.
    first_session_of(&app, query, &june).await;
    // Asked on 3 June 2025, three months ago is early March.
    let asked = json!({"project": app.project, "query": query, "limit": 5,
                       "asked_at": "2025-06-03T12:00:00Z"});
    let answer = search_until(&app, asked.clone(), |ops| ops.len() == 2).await;
    assert_eq!(
        answer["operations"][0]["session_id"],
        march.as_str(),
        "{answer}"
    );
    let (status, found) = app.post("/v1/sessions/search", &asked).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["sessions"][0]["session_id"],
        march.as_str(),
        "{found}"
    );
    // A task's context draws on the sessions of then first.
    for (asked_at, first) in [
        (Value::Null, &june),
        (json!("2025-06-03T12:00:00+00:00"), &march),
    ] {
        let (status, ctx) = app
            .post(
                "/v1/context",
                &json!({"project": app.project, "task": query, "budget_tokens": 500,
                        "asked_at": asked_at}),
            )
            .await;
        assert_eq!(status, 200, "{ctx}");
        assert_eq!(ctx["sessions"][0], first.as_str(), "{asked_at}: {ctx}");
    }
    // Anything but RFC 3339 is refused, naming the field, on every door that takes it.
    for (path, body) in [
        (
            "/v1/search",
            json!({"project": app.project, "query": query, "asked_at": "last June"}),
        ),
        (
            "/v1/sessions/search",
            json!({"project": app.project, "query": query, "asked_at": "2025-06-03"}),
        ),
        (
            "/v1/context",
            json!({"project": app.project, "task": query, "budget_tokens": 200, "asked_at": "yesterday"}),
        ),
        (
            "/v1/search",
            json!({"project": app.project, "query": query, "asked_at": "  "}),
        ),
    ] {
        let (status, err) = app.post(path, &body).await;
        assert_eq!(status, 400, "{path}: {err}");
        assert_eq!(err["error"]["code"], "invalid_timestamp", "{path}: {err}");
        assert_eq!(err["error"]["field"], "asked_at", "{path}: {err}");
    }
    app.stop().await;
}

/// The exact scans give Neo4j's `(1 + cosine) / 2`, as the vector index does: the same vector
/// scores 1, an orthogonal one 0.5 — over the project and within sessions.
#[tokio::test]
async fn exact_vector_scans_score_on_the_index_scale() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (same, orthogonal) = (format!("{sid}-same"), format!("{sid}-orthogonal"));
    app.ops_sync(
        &sid,
        json!([
            {"id": same, "type": "message", "role": "user", "content": "one"},
            {"id": orthogonal, "type": "message", "role": "user", "content": "two"}
        ]),
    )
    .await;
    let axis = |i: usize| {
        let mut v = vec![0.0_f32; 384];
        v[i] = 1.0;
        v
    };
    // Stored as made by the model the other tests' indexers run (they share the database and
    // would re-embed another model's vectors); set again should one of them race it.
    let model = "remote:fake#unlabelled";
    let sessions = vec![sid.clone()];
    for within in [None, Some(sessions.as_slice())] {
        let filter = cairn::graph::turns::Filter {
            project: &app.project,
            types: None,
            sessions: within,
            exclude_session: None,
        };
        let mut scores = None;
        for _ in 0..20 {
            crate::helpers::store()
                .run(
                    neo4rs::query(
                        "UNWIND [[$a, $va], [$b, $vb]] AS row \
                         MATCH (o:Operation {project: $project, id: row[0]}) \
                         SET o.embedding = row[1], o.embedding_model = $model",
                    )
                    .param("project", app.project.as_str())
                    .param("model", model)
                    .param("a", same.as_str())
                    .param("b", orthogonal.as_str())
                    .param(
                        "va",
                        axis(0).iter().map(|x| f64::from(*x)).collect::<Vec<_>>(),
                    )
                    .param(
                        "vb",
                        axis(1).iter().map(|x| f64::from(*x)).collect::<Vec<_>>(),
                    ),
                )
                .await
                .expect("vectors set");
            let rows = cairn::graph::turns::nearest_exact(
                &crate::helpers::store(),
                &filter,
                cairn::graph::turns::Vectors::Operations,
                model,
                &axis(0),
                10,
                1_000,
            )
            .await
            .expect("scan");
            let score = |id: &str| rows.iter().find(|r| r.id == id).map(|r| r.score);
            if let (Some(a), Some(b)) = (score(&same), score(&orthogonal)) {
                scores = Some((a, b));
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let (a, b) = scores.expect("both operations scanned");
        assert!((a - 1.0).abs() < 1e-6, "same {a} {within:?}");
        assert!((b - 0.5).abs() < 1e-6, "orthogonal {b} {within:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_prompt_sent_again_is_listed_once() {
    let app = TestApp::spawn().await;
    let said = "how does the transcript tail worker debounce ingest after the session ends?";
    let (first, second) = (app.session().await, app.session().await);
    // Sent four times in one session and once more, spaced otherwise, in another.
    let mut ops: Vec<Value> = (0..4)
        .map(|_| json!({"type": "message", "role": "user", "content": said}))
        .collect();
    ops.push(json!({"type": "message", "role": "assistant",
                    "content": "The tail worker waits two seconds after the last write, then ingests once."}));
    app.ops_sync(&first, json!(ops)).await;
    app.ops_sync(
        &second,
        json!([{"type": "message", "role": "user", "content": said.replace(' ', "  ")},
               {"type": "message", "role": "user", "content": "does the tail worker debounce ingest?"}]),
    )
    .await;
    let answer = search_until(
        &app,
        json!({"project": app.project, "query": "transcript tail worker debounce ingest", "limit": 10}),
        |ops| ops.len() >= 3,
    )
    .await;
    let ops = answer["operations"].as_array().unwrap();
    let copies = ops
        .iter()
        .filter(|o| {
            o["snippet"]
                .as_str()
                .is_some_and(|s| s.split_whitespace().eq(said.split_whitespace()))
        })
        .count();
    assert_eq!(copies, 1, "{answer}");
    // The other turns still come: the reply and the shorter question.
    assert!(answer.to_string().contains("waits two seconds"), "{answer}");
    assert!(
        answer
            .to_string()
            .contains("does the tail worker debounce ingest?"),
        "{answer}"
    );
    app.stop().await;
}

/// A user's message `id` of session `sid` saying `text`, opening with `who`'s label.
fn said_by(sid: &str, id: &str, who: &str, text: &str) -> Value {
    json!({"id": format!("{sid}-{id}"), "type": "message", "role": "user",
           "content": format!("{who}: {text}")})
}

#[tokio::test]
async fn a_speaker_the_query_names_is_lifted_not_alone() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let said = |id: &str, who: &str, text: &str| said_by(&sid, id, who, text);
    app.ops_sync(
        &sid,
        json!([
            said("a1", "Ann", "Morning, Bo!"),
            said(
                "b1",
                "Bo",
                "Ann, the pottery class was fun; that pottery class rocks."
            ),
            said("a2", "Ann", "I signed up for the pottery class on Mondays."),
            said("a3", "Ann", "See you later."),
            said("b2", "Bo", "Bye."),
            said("b3", "Bo", "Oh, and bring the clay."),
        ]),
    )
    .await;
    let ids = |answer: &Value| -> Vec<String> {
        answer["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["operation_id"].as_str().unwrap().to_string())
            .collect()
    };
    let ask = |query: &str| json!({"project": app.project, "query": query, "limit": 5});
    // Not naming a speaker: Bo's turn says the words twice and ranks first.
    let plain = search_until(&app, ask("which pottery class?"), |ops| ops.len() >= 2).await;
    assert_eq!(
        ids(&plain)[..2],
        [format!("{sid}-b1"), format!("{sid}-a2")],
        "{plain}"
    );
    // Naming Ann, or naming her misspelt ("Anne", a word no turn holds): her turn comes first;
    // Bo's stays. The lift orders; what is reported as the match stays the match's own.
    let similarity = |a: &Value, i: usize| a["operations"][i]["similarity"].as_f64().unwrap();
    for query in [
        "which pottery class did Ann take?",
        "which pottery class did Anne take?",
    ] {
        let named = turn_search(&app, ask(query)).await.1;
        assert_eq!(
            ids(&named)[..2],
            [format!("{sid}-a2"), format!("{sid}-b1")],
            "{query}: {named}"
        );
        assert!(similarity(&named, 0) < similarity(&named, 1), "{named}");
    }
    // Naming both: as before.
    let both = turn_search(&app, ask("which pottery class did Ann and Bo take?"))
        .await
        .1;
    assert_eq!(
        ids(&both)[..2],
        [format!("{sid}-b1"), format!("{sid}-a2")],
        "{both}"
    );
    app.stop().await;
}

/// Who said it is left out of meaning: a message is embedded without the speaker label it
/// opens with, and a query naming a speaker is embedded without the name; the words keep
/// both, so the speaker is still found by name.
#[tokio::test]
async fn meaning_is_read_without_who_said_it() {
    let (server, app, _turn) = fake_embeddings().await;
    let sid = app.session().await;
    let said = |id: &str, who: &str, text: &str| said_by(&sid, id, who, text);
    app.ops_sync(
        &sid,
        json!([
            said("c1", "Caroline", "Morning, Melanie!"),
            said("m1", "Melanie", "I went swimming with the kids."),
            said("c2", "Caroline", "Sounds lovely."),
            said("c3", "Caroline", "See you later."),
            said("m2", "Melanie", "Bye."),
            said("m3", "Melanie", "Bring the towels next time."),
        ]),
    )
    .await;
    let swim = format!("{sid}-m1");
    let body = json!({"project": app.project, "query": "which sport does Melanie like?"});
    let answer = until_embedded(&app, &body, &swim).await;
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    assert_eq!(sent(&server, "I went swimming with the kids.").await, 1);
    assert_eq!(
        sent(&server, "Melanie: I went swimming with the kids.").await,
        0
    );
    assert!(sent(&server, "which sport does like?").await >= 1);
    // The label stays in the words: a search by name finds the speaker's turn.
    let by_name = top(&app, "Melanie towels").await;
    assert_eq!(by_name["operation_id"], format!("{sid}-m3"), "{by_name}");
    assert_eq!(by_name["matched_by"], "both", "{by_name}");
    // A query naming no speaker is embedded as it is.
    assert_eq!(
        top(&app, "swimming kids").await["operation_id"],
        swim.as_str()
    );
    assert!(sent(&server, "swimming kids").await >= 1);
    app.stop().await;
}

/// The first operation a search for `query` finds.
async fn top(app: &TestApp, query: &str) -> Value {
    let (status, answer) = turn_search(app, json!({"project": app.project, "query": query})).await;
    assert_eq!(status, 200, "{answer}");
    answer["operations"][0].clone()
}

#[tokio::test]
async fn a_command_run_hundreds_of_times_leaves_room_for_what_else_was_said() {
    let app = TestApp::spawn().await;
    commands_run_again(&app, "fulltext").await;
    app.stop().await;
}

#[tokio::test]
async fn by_meaning_too_a_command_run_hundreds_of_times_leaves_room_for_the_rest() {
    // The copies share one vector too: they stand together in the nearest list.
    let (_server, app, _turn) = fake_embeddings().await;
    commands_run_again(&app, "hybrid").await;
    app.stop().await;
}

/// One command run 250 times, more often than a list is deep, among 30 messages on the same
/// subject: its short text holds the query's word twice and ranks above every message. Turn
/// search (in `mode`, once every turn is embedded) lists it once beside nine messages, and a
/// task context shows the messages, not one line.
async fn commands_run_again(app: &TestApp, mode: &str) {
    let sid = app.session().await;
    let mut ops: Vec<Value> = (0..250)
        .map(|_| {
            json!({"type": "tool_call", "tool": "Bash", "target": "cargo test",
                   "summary": "test run", "status": "ok"})
        })
        .collect();
    let parts = ["parser", "lexer", "cache", "router", "spool", "indexer"];
    ops.extend((0..30).map(|i| {
        let part = parts[i % parts.len()];
        json!({"type": "message", "role": "user",
               "content": format!("the {part} test failed again after we moved {part}_{i}.rs into the new crate")})
    }));
    app.ops_sync(&sid, json!(ops)).await;
    let body = json!({"project": app.project, "query": "test", "limit": 10});
    let answer = settle(
        180,
        || async {
            retry_now(app).await;
            turn_search(app, body.clone()).await.1
        },
        |a: &Value| {
            a["mode"] == mode
                && a["pending_embeddings"].as_i64().unwrap_or(0) == 0
                && a["operations"].as_array().is_some_and(|o| o.len() >= 10)
        },
    )
    .await;
    let found = answer["operations"].as_array().unwrap();
    let kinds: Vec<&str> = found.iter().filter_map(|o| o["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_call").count(),
        1,
        "the command listed once: {answer}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "message").count(),
        9,
        "{answer}"
    );
    // The copy listed is one both lists kept: found by its words and, in hybrid, its meaning.
    let command = found.iter().find(|o| o["type"] == "tool_call").unwrap();
    let both = if mode == "hybrid" { "both" } else { "fulltext" };
    assert_eq!(command["matched_by"], both, "{answer}");
    let (status, context) = app
        .post(
            "/v1/context",
            &json!({"project": app.project, "task": "which test failed", "budget_tokens": 2000}),
        )
        .await;
    assert_eq!(status, 200, "{context}");
    let text = context["text"].as_str().unwrap();
    let said = (0..30)
        .filter(|i| text.contains(&format!("_{i}.rs into")))
        .count();
    assert!(said >= 20, "{said} of the 30 messages: {text}");
    assert!(text.matches("cargo test").count() <= 1, "{text}");
}

/// A text the embeddings endpoint refuses (too long for its window, say) is passed over: the
/// rest of its session and the other sessions of the same pass are embedded, and the refused
/// turn is still found by its words.
#[tokio::test]
async fn a_text_the_endpoint_refuses_does_not_hold_back_the_rest() {
    let (_server, refuse, app, _turn) = refusing_embeddings("zanzibar").await;
    refuse.store(true, Ordering::SeqCst);
    let a = app.session().await;
    let b = app.session().await;
    let op = |id: String, content: &str| json!({"id": id, "type": "message", "role": "user", "summary": "s", "content": content});
    app.ops_sync(
        &a,
        json!([
            op(format!("{a}-1"), "the staging database ran out of disk"),
            op(
                format!("{a}-2"),
                "a zanzibar spice market sells cloves by the sack"
            ),
            op(format!("{a}-3"), "we moved the logs to object storage")
        ]),
    )
    .await;
    app.ops_sync(
        &b,
        json!([op(format!("{b}-1"), "the release train leaves on friday")]),
    )
    .await;
    let n = settle(
        120,
        || async {
            count(
                "MATCH (o:Operation {project: $project}) \
                 WHERE o.embedding_model = 'remote:fake#unlabelled' RETURN count(o) AS n",
                &app.project,
            )
            .await
        },
        |n: &i64| *n >= 3,
    )
    .await;
    assert_eq!(n, 3, "every turn but the refused one embedded");
    let refused = count(
        &format!(
            "MATCH (o:Operation {{project: $project, id: '{a}-2'}}) \
             WHERE o.embedding IS NULL RETURN count(o) AS n"
        ),
        &app.project,
    )
    .await;
    assert_eq!(refused, 1, "the refused turn has no vector");
    let (_, found) = turn_search(
        &app,
        json!({"project": app.project, "query": "zanzibar cloves"}),
    )
    .await;
    assert!(
        matched(&found, &format!("{a}-2")).is_some(),
        "found by its words: {found}"
    );
    let (_, found) = turn_search(
        &app,
        json!({"project": app.project, "query": "release train"}),
    )
    .await;
    assert_eq!(
        found["pending_embeddings"], 0,
        "nothing left pending: {found}"
    );
}

/// Without an embedding model a session leaves the indexer's queue once its texts are made
/// (the queue is not read again and again for vectors nobody makes here), while an instance
/// with a model still finds it pending; a session captured before that queue was kept joins
/// it on start-up.
#[tokio::test]
async fn without_a_model_a_session_leaves_the_texts_queue_once_its_texts_are_made() {
    // What is queued for a model's vectors is asked below: no embedding app or replica of
    // this process may embed (or claim) the session meanwhile.
    let _turn = cairn_testkit::embed::embedding_turn().await;
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let ops = json!([
        {"id": format!("{sid}-1"), "type": "message", "role": "user",
         "content": "the cache backend keeps failing"},
        {"id": format!("{sid}-2"), "type": "write", "target": "src/cache.rs",
         "summary": "retry the cache backend"},
    ]);
    app.ops_sync(&sid, ops.clone()).await;
    let store = crate::helpers::store();
    let queued = |model: &'static str| {
        let store = store.clone();
        let sid = sid.clone();
        async move {
            let work = cairn::graph::turns::work(&store, model, "test", 2_000, 1)
                .await
                .expect("work");
            work.iter().any(|s| s.id == sid)
        }
    };
    let flags = "MATCH (s:Session {project: $project}) \
                 WHERE s.turns_pending AND NOT s.turns_texts_pending \
                   AND s.turns_text_seq = s.last_seq RETURN count(s) AS n";
    let done = |what: &'static str| {
        let app = &app;
        async move {
            crate::helpers::eventually(60, what, || async { count(flags, &app.project).await == 1 })
                .await
        }
    };
    done("the texts are made").await;
    assert!(!queued("").await, "texts done: not queued without a model");
    assert!(queued("m").await, "still pending for a model's vectors");

    // The same batch again (a client's retry, an import run twice): queued by the capture
    // that stored nothing new, then let go with nothing to make.
    app.ops_sync(&sid, ops).await;
    done("a batch already stored leaves the queue").await;

    // Captured by a cairn from before the texts' queue: pending, no flag, texts not made.
    store
        .run(
            neo4rs::query(
                "MATCH (s:Session {id: $sid}) SET s.turns_text_seq = 0 REMOVE s.turns_texts_pending",
            )
            .param("sid", sid.as_str()),
        )
        .await
        .expect("as before");
    assert!(!queued("").await);
    // Only the start-up pass can queue it again; the app's indexer then makes its texts.
    cairn::graph::turns::backfill(&store, "")
        .await
        .expect("backfill");
    done("the texts are made again").await;
}
