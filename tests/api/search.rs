//! `POST /v1/sessions/search`: BM25 always, embeddings (faked at the HTTP boundary) when
//! configured, background search documents, Lucene-safe queries, validation.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};

use serde_json::{json, Value};
use wiremock::{matchers, Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::{
    app_with_embeddings, count, embeddings_answer, eventually, refusing_embeddings, settle, TestApp,
};

/// A closed session with a task, a write and a summary.
async fn worked(app: &TestApp, task: &str, summary: &str, file: &str) -> String {
    let (status, body) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "task": task}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let sid = body["session_id"].as_str().expect("id").to_string();
    app.ops_sync(
        &sid,
        json!([{"type": "write", "summary": format!("edited {file}"), "files_modified": [file]}]),
    )
    .await;
    let (status, body) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": summary}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    sid
}

async fn search(app: &TestApp, query: &str) -> (u16, Value) {
    app.post(
        "/v1/sessions/search",
        &json!({"project": app.project, "query": query, "limit": 5}),
    )
    .await
}

fn ids(body: &Value) -> Vec<String> {
    body["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| h["session_id"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `query` returns `first` as its best hit; returns the body.
async fn until_first(app: &TestApp, query: &str, first: &str) -> Value {
    until_first_where(app, query, first, |_| true).await
}

/// Waits until `query` returns `first` as its best hit and that hit satisfies `done` (the
/// index is eventually consistent: an older document may rank the session first already).
async fn until_first_where(
    app: &TestApp,
    query: &str,
    first: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let ranked = |body: &Value| {
        ids(body).first().map(String::as_str) == Some(first) && done(&body["sessions"][0])
    };
    // The indexer shares a busy machine with every other test: allow it two minutes.
    let body = settle(
        120,
        || async {
            let (status, body) = search(app, query).await;
            assert_eq!(status, 200, "{body}");
            body
        },
        ranked,
    )
    .await;
    assert!(
        ranked(&body),
        "`{query}` never ranked {first} first; last answer {body}"
    );
    body
}

#[tokio::test]
async fn fulltext_finds_sessions_by_their_words() {
    let app = TestApp::spawn().await;
    let login = worked(
        &app,
        "Fix the login redirect loop",
        "Redirect loop after OAuth callback fixed by clearing the stale cookie",
        "src/auth/callback.rs",
    )
    .await;
    let db = worked(
        &app,
        "Speed up database migrations",
        "Batched the schema migrations; startup is 3x faster",
        "src/db/migrate.rs",
    )
    .await;
    let body = until_first_where(&app, "redirect cookie", &login, |hit| {
        hit["files"].as_array().is_some_and(|f| !f.is_empty())
    })
    .await;
    assert_eq!(body["mode"], "fulltext");
    let hit = &body["sessions"][0];
    assert!(hit["summary"].as_str().unwrap().contains("stale cookie"));
    assert_eq!(hit["files"], json!(["src/auth/callback.rs"]));
    assert!(hit["similarity"].as_f64().unwrap() > 0.0);
    assert!(hit["score"].as_f64().unwrap() > 0.6, "{hit}");
    assert!(hit["days_ago"].as_f64().unwrap() < 1.0);
    assert!(
        !ids(&body).contains(&db),
        "an unrelated session matched: {body}"
    );
    // Stemming: "migrating" finds "migrations"; file names are searchable.
    until_first(&app, "migrating", &db).await;
    until_first(&app, "migrate.rs", &db).await;
    app.stop().await;
}

#[tokio::test]
async fn the_document_follows_the_session_as_it_changes() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let (status, _) = search(&app, "memoization").await;
    assert_eq!(status, 200);
    app.ops_sync(
        &sid,
        json!([{"type": "tool_call", "summary": "profiled the memoization layer"}]),
    )
    .await;
    until_first(&app, "memoization", &sid).await;
    let (status, body) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": sid, "subject": "cache store",
                    "choice": "use an LRU keyed by request hash", "rationale": "bounded memory"}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    until_first(&app, "LRU bounded", &sid).await;
    app.stop().await;
}

#[tokio::test]
async fn lucene_syntax_in_a_query_never_errors() {
    let app = TestApp::spawn().await;
    let sid = worked(&app, "parser work", "fixed the AND/OR parser", "src/p.rs").await;
    until_first(&app, "parser", &sid).await;
    for q in [
        "\"unbalanced (quote",
        "AND OR NOT",
        "*** ??? ~~~",
        "\\",
        "title:foo~2^3 [a TO b] {x}",
        "project:other-project",
        "&& || ! - +",
        "the of and",
        "parser)) OR project:*",
    ] {
        let (status, body) = search(&app, q).await;
        assert_eq!(status, 200, "{q}: {body}");
    }
    // Field syntax is text: it cannot widen the search to another project's sessions.
    let (_, body) = search(&app, "parser)) OR project:*").await;
    assert!(ids(&body).iter().all(|id| id == &sid), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn search_stays_in_its_project() {
    let app = TestApp::spawn().await;
    let other = format!("{}-other", app.project);
    let mine = worked(
        &app,
        "tune the websocket heartbeat",
        "heartbeat tuned",
        "src/ws.rs",
    )
    .await;
    let theirs_client = app.client_for(&other, "admin").await;
    let r = theirs_client
        .post(app.url("/v1/sessions"))
        .json(&json!({"project": other, "task": "tune the websocket heartbeat"}))
        .send()
        .await
        .expect("request");
    let (status, body) = crate::helpers::split(r).await;
    assert!(status == 201 || status == 202, "{body}");
    let theirs = body["session_id"].as_str().unwrap().to_string();
    until_first(&app, "websocket heartbeat", &mine).await;
    let (_, body) = search(&app, "websocket heartbeat").await;
    assert!(!ids(&body).contains(&theirs), "{body}");
    // A key of one project cannot search another.
    let (status, body) = app
        .post(
            "/v1/sessions/search",
            &json!({"project": other, "query": "websocket"}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn bad_search_input_names_the_field() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            json!({"project": app.project, "query": "  "}),
            "missing_field",
            "query",
        ),
        (
            json!({"project": app.project, "query": "x".repeat(1001)}),
            "field_too_large",
            "query",
        ),
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
    ];
    for (body, code, field) in cases {
        let (status, answer) = app.post("/v1/sessions/search", &body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
    // The key names its project; any other, malformed or not, is forbidden.
    let (status, answer) = app
        .post(
            "/v1/sessions/search",
            &json!({"project": "bad project", "query": "x"}),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("forbidden"))
    );
    assert_eq!(answer["error"]["field"], "project", "{answer}");
    app.stop().await;
}

/// One test for everything with an embeddings endpoint: the indexer is global, so two apps
/// with endpoints would embed each other's sessions.
#[tokio::test]
async fn embeddings_fail_then_recover_and_hybrid_finds_by_meaning() {
    let server = MockServer::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    // The endpoint fails until told otherwise.
    let healthy = Arc::new(AtomicBool::new(false));
    let ok = healthy.clone();
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/embeddings"))
        .respond_with(move |req: &Request| {
            seen.fetch_add(1, Ordering::SeqCst);
            if ok.load(Ordering::SeqCst) {
                embeddings_answer(req)
            } else {
                ResponseTemplate::new(500).set_body_json(
                    json!({"error": {"message": "overloaded", "type": "server_error", "param": null, "code": null}}),
                )
            }
        })
        .mount(&server)
        .await;
    let (app, _turn) = app_with_embeddings(&server).await;
    let auth = worked(
        &app,
        "Fix the login redirect",
        "signin works again after the callback change",
        "src/callback.rs",
    )
    .await;
    let db = worked(
        &app,
        "Tune the postgres database pool",
        "pool size raised to 32",
        "src/pool.rs",
    )
    .await;
    let embedded = |pending: bool| {
        let project = app.project.clone();
        async move {
            let cypher = if pending {
                "MATCH (s:Session {project: $project}) WHERE s.embed_attempts > 0 AND s.embed_pending AND s.embedding IS NULL RETURN count(s) AS n"
            } else {
                "MATCH (s:Session {project: $project}) WHERE s.embedding IS NOT NULL AND NOT s.embed_pending AND s.embedding_model = 'remote:fake#unlabelled' AND s.embedding_dim = 384 RETURN count(s) AS n"
            };
            count(cypher, &project).await
        }
    };
    // The turn indexer's failing attempts (with their retries) share each pass: give it time.
    eventually(
        120,
        "embedding attempts failed and stayed pending",
        || async { embedded(true).await == 2 },
    )
    .await;
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the client retries before giving up"
    );
    // The query cannot be embedded either: fulltext answers, and says so.
    let body = until_first(&app, "redirect", &auth).await;
    assert_eq!(body["mode"], "fulltext");
    assert!(body["degraded"].as_str().is_some(), "{body}");
    // The endpoint recovers; make the retry come due now rather than after the backoff (and
    // as a first try, which the shared queue takes before sessions tried before).
    healthy.store(true, Ordering::SeqCst);
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {project: $project}) \
                 SET s.embed_retry_at = 0, s.embed_attempts = 0",
            )
            .param("project", app.project.as_str()),
        )
        .await
        .expect("reset retry time");
    // The indexer serves every project of the database in turn: under a full parallel suite
    // other tests' sessions share it, so this waits longer than the work itself takes.
    eventually(180, "the embeddings were retried and stored", || async {
        embedded(false).await == 2
    })
    .await;
    // No shared word with the session: only meaning can find it.
    let body = until_first(&app, "authentication credentials", &auth).await;
    assert_eq!(body["mode"], "hybrid");
    assert!(body.get("degraded").is_none(), "{body}");
    assert_eq!(ids(&body), vec![auth.clone()], "{body}");
    let (_, body) = search(&app, "sql").await;
    assert_eq!(body["mode"], "hybrid");
    assert_eq!(ids(&body), vec![db.clone()], "{body}");
    app.stop().await;
}

/// A session whose search document the model has not embedded yet (the indexer behind, or a
/// switch of models) is ranked by the lists that could hold it, not as a 0 among the nearest
/// neighbours: the session that holds every word of the query comes first meanwhile.
#[tokio::test]
async fn a_session_waiting_for_its_vector_ranks_by_its_words_meanwhile() {
    let (_server, refuse, app, _turn) = refusing_embeddings("parallel").await;
    let partly = worked(
        &app,
        "The nightly backup restore is slow",
        "restore reads one table at a time",
        "src/restore.rs",
    )
    .await;
    let vectors = |model: &'static str| {
        let project = app.project.clone();
        async move {
            count(
                &format!(
                    "MATCH (s:Session {{project: $project}}) WHERE s.embedding_model = '{model}' \
                     AND NOT s.embed_pending RETURN count(s) AS n"
                ),
                &project,
            )
            .await
        }
    };
    eventually(180, "the first session's document was embedded", || async {
        vectors("remote:fake#unlabelled").await == 1
    })
    .await;
    refuse.store(true, Ordering::SeqCst);
    let waiting = worked(
        &app,
        "The nightly backup restore now reads snapshots in parallel",
        "snapshots restored in parallel",
        "src/snapshots.rs",
    )
    .await;
    let query = "nightly backup restore snapshots";
    let body = until_first(&app, query, &waiting).await;
    assert_eq!(body["mode"], "hybrid", "{body}");
    assert_eq!(ids(&body), vec![waiting.clone(), partly.clone()], "{body}");
    // It is still waiting for its vector.
    let embedded = count(
        "MATCH (s:Session {project: $project}) WHERE s.embedding IS NOT NULL \
         AND s.task CONTAINS 'parallel' RETURN count(s) AS n",
        &app.project,
    );
    assert_eq!(embedded.await, 0, "{body}");
    app.stop().await;
}

async fn handover(app: &TestApp, query: &str) -> (u16, Value) {
    app.get(&format!("/v1/handover?project={}{query}", app.project))
        .await
}

#[tokio::test]
async fn handover_brings_the_last_session_related_work_patterns_and_next_steps() {
    let app = TestApp::spawn().await;
    let mut related = Vec::new();
    for (i, task) in [
        "Fix login cookie refresh",
        "Login cookie expires too early",
        "Harden login cookie flags",
    ]
    .iter()
    .enumerate()
    {
        related.push(
            worked(
                &app,
                task,
                &format!("login cookie change {i}"),
                "src/auth/session.rs",
            )
            .await,
        );
    }
    let unrelated = worked(
        &app,
        "Render the billing PDF",
        "PDF margins fixed",
        "src/pdf.rs",
    )
    .await;
    // The last session: a todo list, a decision whose file was not changed since, a write
    // without a test, closed with next steps.
    let (_, body) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "task": "Rotate login cookie signing keys"}),
        )
        .await;
    let last = body["session_id"].as_str().unwrap().to_string();
    app.ops_sync(
        &last,
        json!([
            {"type": "write", "summary": "new key ring", "files_modified": ["src/auth/keys.rs"]},
            {"type": "todo", "summary": "plan", "todos": [
                {"content": "wire key ring into the cookie signer", "status": "pending"},
                {"content": "new key ring", "status": "completed"}]}
        ]),
    )
    .await;
    let (status, body) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": last, "subject": "key rotation",
                    "choice": "rotate weekly", "rationale": "limits exposure",
                    "files": ["src/auth/rotation.rs"]}),
        )
        .await;
    assert!(status == 201 || status == 202, "{status} {body}");
    let (status, _) = app
        .post(
            &format!("/v1/sessions/{last}/close"),
            &json!({"summary": "key ring in place", "next_steps": ["document the rotation"]}),
        )
        .await;
    assert!(status == 201 || status == 202);
    let (status, body) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "cookie changes need a browser test",
                    "status": "active"}),
        )
        .await;
    assert!((200..300).contains(&status), "{status} {body}");
    let (_, body) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "task": "login cookie is dropped after refresh"}),
        )
        .await;
    let now = body["session_id"].as_str().unwrap().to_string();

    let body = settle(
        60,
        || async {
            let (status, b) = handover(&app, &format!("&session_id={now}")).await;
            assert_eq!(status, 200, "{b}");
            b
        },
        |b| {
            b["related"].as_array().is_some_and(|r| r.len() >= 3)
                && b["patterns"]["hot_files"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty())
        },
    )
    .await;
    assert_eq!(body["last_session"]["session_id"], last, "{body}");
    let unfinished = body["last_session"]["unfinished"].to_string();
    assert!(unfinished.contains("wire key ring"), "{body}");
    assert!(unfinished.contains("document the rotation"), "{body}");
    assert!(!unfinished.contains("\"new key ring\""), "{body}");
    let rel: Vec<&str> = body["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    for id in &related {
        assert!(rel.contains(&id.as_str()), "{id} missing: {body}");
    }
    assert!(
        !rel.contains(&unrelated.as_str()) && !rel.contains(&now.as_str()),
        "{body}"
    );
    assert!(body["related"][0]["relevance_pct"].as_u64().unwrap() > 0);
    assert_eq!(
        body["patterns"]["hot_files"],
        json!([{"path": "src/auth/session.rs", "sessions": 3}])
    );
    assert!(
        body["patterns"]["beliefs"]
            .to_string()
            .contains("browser test"),
        "{body}"
    );
    let steps = body["next_steps"].to_string();
    assert!(
        steps.contains("decision_follow_up") && steps.contains("src/auth/rotation.rs"),
        "{body}"
    );
    assert!(
        steps.contains("untested_change") && steps.contains("src/auth/keys.rs"),
        "{body}"
    );
    let md = body["markdown"].as_str().unwrap();
    assert!(
        md.starts_with("## Handover") && md.contains("### Related past sessions"),
        "{md}"
    );
    assert!(body["tokens_used"].as_u64().unwrap() <= 1500);

    // A small budget keeps the most important part and stays within it.
    let (_, small) = handover(&app, &format!("&session_id={now}&budget_tokens=60")).await;
    assert!(small["tokens_used"].as_u64().unwrap() <= 60, "{small}");
    assert!(
        small["markdown"]
            .as_str()
            .unwrap()
            .contains("### Last session"),
        "{small}"
    );
    let (status, bad) = handover(&app, "&budget_tokens=10").await;
    assert_eq!(status, 400);
    assert_eq!(bad["error"]["field"], "budget_tokens");
    app.stop().await;
}

#[tokio::test]
async fn handover_of_an_empty_project_is_empty_not_an_error() {
    let app = TestApp::spawn().await;
    let (status, body) = handover(&app, "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body["last_session"].is_null());
    assert_eq!(body["related"], json!([]));
    assert_eq!(body["markdown"], "## Handover\n");
    app.stop().await;
}

/// Projects take turns in the queue of search documents to embed: a small project's session
/// is not held up behind a large project's newer backlog.
#[tokio::test]
async fn projects_take_turns_in_the_document_embedding_queue() {
    let flags = "search_doc: 'a document', search_doc_hash: 'h', embed_pending: true";
    let (big, small) = crate::helpers::two_projects_queued("doc", flags).await;
    let pending = cairn::graph::search::pending_docs(&crate::helpers::store(), 2_000, "test")
        .await
        .expect("pending documents");
    let answer = pending.into_iter().map(|s| (s.project, s.id)).collect();
    let order = crate::helpers::queue_order(&big, &small, answer).await;
    assert_eq!(order, ["b1", "s1", "b2", "b3"]);
}

/// Two indexers rebuild one dirty session side by side (replicas do): the document built
/// from the older revision, stored last, neither replaces the newer one nor queues it for
/// another embedding.
#[tokio::test]
async fn a_document_built_from_an_older_revision_does_not_replace_a_newer_one() {
    use cairn::graph::search::{store_docs, Doc};
    #[derive(serde::Deserialize)]
    struct Row {
        doc: String,
        rev: Option<i64>,
        pending: bool,
        dirty: bool,
    }
    // No app embeds meanwhile: the session's pending flag is this test's to read.
    let _turn = cairn_testkit::embed::embedding_turn().await;
    let store = crate::helpers::store();
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    let id = format!("{project}-s1");
    // Clean at revision 3, so no indexer of this process rebuilds it behind the test's back.
    store
        .run(
            neo4rs::query(
                "CREATE (:Session {id: $id, project: $project, last_seq: 0, search_rev: 3,
                                  search_dirty: false, last_activity_at: 0})",
            )
            .param("id", id.as_str())
            .param("project", project.as_str()),
        )
        .await
        .expect("session");
    let doc = |rev: i64, text: &str| Doc {
        id: id.clone(),
        project: project.clone(),
        rev,
        doc: text.into(),
        parts: None,
        hash: format!("hash of {text}"),
        files: vec![],
        importance: 0.0,
    };
    let read = || async {
        store
            .fetch_one::<Row>(
                neo4rs::query(
                    "MATCH (s:Session {id: $id, project: $project})
                     RETURN s.search_doc AS doc, s.search_doc_rev AS rev,
                            s.embed_pending AS pending, s.search_dirty AS dirty",
                )
                .param("id", id.as_str())
                .param("project", project.as_str()),
            )
            .await
            .expect("read")
            .expect("the session")
    };
    store_docs(&store, &[doc(3, "Task: newer")])
        .await
        .expect("store");
    let stored = read().await;
    assert_eq!(stored.doc, "Task: newer");
    assert!(stored.pending && !stored.dirty);
    // Its embedding landed.
    store
        .run(
            neo4rs::query(
                "MATCH (s:Session {id: $id, project: $project}) SET s.embed_pending = false",
            )
            .param("id", id.as_str())
            .param("project", project.as_str()),
        )
        .await
        .expect("embedded");
    // The slow rebuild, read at revision 2, arrives now.
    store_docs(&store, &[doc(2, "Task: older")])
        .await
        .expect("store");
    let after = read().await;
    assert_eq!((after.doc.as_str(), after.rev), ("Task: newer", Some(3)));
    assert!(
        !after.pending && !after.dirty,
        "the older document queued the session again"
    );
    // The same revision rebuilt again (another replica's pass) is stored as before.
    store_docs(&store, &[doc(3, "Task: newer")])
        .await
        .expect("store");
    assert!(
        !read().await.pending,
        "an unchanged text is not embedded again"
    );
    cairn::graph::purge::project_now(&store, &project)
        .await
        .expect("purge");
}

const DAY: i64 = 86_400_000;

/// RFC 3339 of epoch milliseconds, as a client sends a time.
fn rfc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a time")
        .to_rfc3339()
}

#[tokio::test]
async fn a_history_is_dated_by_its_work_not_by_the_day_it_arrives() {
    let app = TestApp::spawn().await;
    let now = chrono::Utc::now().timestamp_millis();
    let near = |v: &Value, want: i64| {
        let got = v.as_i64().unwrap_or_else(|| panic!("not a time: {v}"));
        assert!((got - want).abs() < 60_000, "{got} is not {want}");
    };
    // Imported by a client that states no session times: its operations date it.
    let old = app.session().await;
    app.ops_sync(
        &old,
        json!([
            {"type": "message", "role": "user", "content": "the quarterly ledger export drops rows", "at": rfc(now - 400 * DAY)},
            {"type": "message", "role": "assistant", "content": "the ledger export pages by offset", "at": rfc(now - 399 * DAY)},
        ]),
    )
    .await;
    let (s, b) = app
        .post(&format!("/v1/sessions/{old}/close"), &json!({}))
        .await;
    assert!(s == 201 || s == 202, "{s} {b}");
    // Imported by a client that states them.
    let stated = rfc(now - 30 * DAY);
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "task": "ledger totals", "at": stated}),
        )
        .await;
    assert!(s == 201 || s == 202, "{s} {b}");
    let dated = b["session_id"].as_str().unwrap().to_string();
    app.ops_sync(
        &dated,
        json!([{"type": "message", "role": "user", "content": "ledger totals", "at": rfc(now - 30 * DAY + 3_600_000)}]),
    )
    .await;
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{dated}/close"),
            &json!({"at": rfc(now - 30 * DAY + 7_200_000)}),
        )
        .await;
    assert!(s == 201 || s == 202, "{s} {b}");

    let (_, row) = app.get(&format!("/v1/sessions/{old}")).await;
    near(&row["started_at"], now - 400 * DAY);
    near(&row["last_activity_at"], now - 399 * DAY);
    near(&row["closed_at"], now);
    let (_, row) = app.get(&format!("/v1/sessions/{dated}")).await;
    near(&row["started_at"], now - 30 * DAY);
    near(&row["last_activity_at"], now - 30 * DAY + 3_600_000);
    near(&row["closed_at"], now - 30 * DAY + 7_200_000);

    // Session search's recency (and a handover's "last session") see when the work was.
    let body = until_first(&app, "quarterly ledger export", &old).await;
    let days = body["sessions"][0]["days_ago"].as_f64().unwrap();
    assert!((398.5..=399.5).contains(&days), "{body}");

    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "at": "last tuesday"}),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str(), b["error"]["field"].as_str()),
        (400, Some("invalid_timestamp"), Some("at")),
        "{b}"
    );
}

#[tokio::test]
async fn sessions_imported_before_they_were_dated_are_dated_once_on_upgrade() {
    let app = TestApp::spawn().await;
    let now = chrono::Utc::now().timestamp_millis();
    let old = app.session().await;
    app.ops_sync(
        &old,
        json!([
            {"type": "message", "role": "user", "content": "rotate the signing keys", "at": rfc(now - 200 * DAY)},
            {"type": "message", "role": "assistant", "content": "keys rotated", "at": rfc(now - 199 * DAY)},
        ]),
    )
    .await;
    let live = app.session().await;
    app.ops_sync(
        &live,
        json!([{"type": "message", "role": "user", "content": "today's work"}]),
    )
    .await;
    // As an earlier cairn stored them: the import's day as start and last activity, and
    // no pass recorded.
    let store = crate::helpers::store();
    store
        .run(
            neo4rs::query(
                "MATCH (s:Session {id: $id}) SET s.started_at = $now, s.last_activity_at = $now
                 WITH 1 AS one MATCH (m:SchemaMeta {id: 'cairn'}) REMOVE m.sessions_dated",
            )
            .param("id", old.as_str())
            .param("now", now),
        )
        .await
        .expect("store as before");
    let (_, before) = app.get(&format!("/v1/sessions/{live}")).await;

    // (Another test's server may take the pass first: what counts is the outcome.)
    cairn::graph::sessions::date_by_work(&store)
        .await
        .expect("dating pass");
    let (_, row) = app.get(&format!("/v1/sessions/{old}")).await;
    assert_eq!(
        row["started_at"].as_i64().unwrap() / 1000,
        (now - 200 * DAY) / 1000,
        "{row}"
    );
    assert_eq!(
        row["last_activity_at"].as_i64().unwrap() / 1000,
        (now - 199 * DAY) / 1000,
        "{row}"
    );
    let (_, after) = app.get(&format!("/v1/sessions/{live}")).await;
    assert_eq!(
        before, after,
        "a session dated by its work is left as it is"
    );
    // Recorded: the next start does not scan again.
    assert_eq!(
        cairn::graph::sessions::date_by_work(&store)
            .await
            .expect("second pass"),
        0
    );
}

/// The session documents found by `query`'s words alone (no turns, no vectors).
async fn by_document(project: &str, query: &str) -> Vec<String> {
    let lucene = cairn::recall::rank::lucene_query(project, query).expect("searchable words");
    cairn::graph::search::sessions_by_words(&crate::helpers::store(), project, &lucene, 5)
        .await
        .expect("document search")
        .into_iter()
        .map(|s| s.id)
        .collect()
}

/// Code names its things `SessionRegistry`, `token_store.rs`, `parseConfig`: a session's
/// document is found by their words, and one stored without its identifiers' parts (as an
/// older cairn stored it) is made again on upgrade.
#[tokio::test]
async fn a_session_document_is_found_by_its_identifiers_words() {
    let app = TestApp::spawn().await;
    let sid = worked(
        &app,
        "Move the expiry check into the TokenStore",
        "Renamed parseConfig; the SessionRegistry now owns expiry",
        "src/auth/token_store.rs",
    )
    .await;
    let project = app.project.as_str();
    for query in ["session registry", "token store", "parse config"] {
        let found = settle(
            60,
            || by_document(project, query),
            |ids: &Vec<String>| !ids.is_empty(),
        )
        .await;
        assert_eq!(found, std::slice::from_ref(&sid), "{query}");
    }

    // As an older cairn stored it: the document without its identifiers' parts.
    crate::helpers::store()
        .run(
            neo4rs::query(
                "MATCH (s:Session {id: $id}) REMOVE s.search_doc_parts, s.search_doc_form",
            )
            .param("id", sid.as_str()),
        )
        .await
        .expect("parts removed");
    let gone = settle(
        60,
        || by_document(project, "session registry"),
        |ids: &Vec<String>| ids.is_empty(),
    )
    .await;
    assert!(gone.is_empty(), "only the parts found it: {gone:?}");
    let marked = cairn::recall::index::backfill(&crate::helpers::store())
        .await
        .expect("backfill");
    assert!(marked >= 1, "{marked}");
    let found = settle(
        60,
        || by_document(project, "session registry"),
        |ids: &Vec<String>| !ids.is_empty(),
    )
    .await;
    assert_eq!(found, [sid]);
    app.stop().await;
}
