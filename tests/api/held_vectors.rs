//! A small project's vectors held in memory (`recall::held_vectors`): they rank as Neo4j's
//! exact comparison ranks, take in what the indexer stores after they were read, give way
//! when Neo4j no longer holds what they hold, and go with a deleted session.

use cairn::embed::signature;
use cairn::graph::turns::{self as store_turns, Filter, TurnRow, Vectors};
use cairn::recall::held_vectors;
use cairn_testkit::embed::fake_vector;
use serde_json::json;

use crate::helpers::{settle, store};

use crate::turns::{fake_embeddings, until_embedded};

/// [`store_turns::nearest_exact`], on the heap: the test's future would overflow its stack.
async fn exact(
    store: &cairn::graph::Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    v: &[f32],
    k: usize,
    scan: usize,
) -> cairn::graph::StoreResult<Vec<TurnRow>> {
    Box::pin(store_turns::nearest_exact(store, f, of, model, v, k, scan)).await
}

/// [`held_vectors::nearest`], on the heap.
#[allow(clippy::too_many_arguments)]
async fn nearest(
    store: &cairn::graph::Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    v: &[f32],
    k: usize,
    scan: usize,
    size: Option<usize>,
) -> cairn::graph::StoreResult<Vec<TurnRow>> {
    Box::pin(held_vectors::nearest(store, f, of, model, v, k, scan, size)).await
}

const MODEL: &str = "remote:fake#unlabelled";
const SCAN: usize = 20_000;

fn listed(rows: &[TurnRow]) -> Vec<(String, f64)> {
    rows.iter().map(|r| (r.id.clone(), r.score)).collect()
}

/// Scores alike place by place (within the signatures' error), and the same id at each place
/// whose score no other row shares (nor the last one's, which rows past the list may share).
fn assert_alike(held: &[TurnRow], neo4j: &[TurnRow], what: &str) {
    let (a, b) = (listed(held), listed(neo4j));
    assert_eq!(a.len(), b.len(), "{what}: {a:?} against {b:?}");
    let close = |x: f64, y: f64| (x - y).abs() < 0.002;
    for (i, ((ia, sa), (ib, sb))) in a.iter().zip(&b).enumerate() {
        assert!(close(*sa, *sb), "{what}: {a:?} against {b:?}");
        // A row tied with another, or with the last (rows past the list may tie with it).
        let last = b.last().map_or(0.0, |(_, s)| *s);
        let tied = close(*sb, last)
            || b.iter()
                .enumerate()
                .any(|(j, (_, s))| j != i && close(*s, *sb));
        if !tied {
            assert_eq!(ia, ib, "{what}: {a:?} against {b:?}");
        }
    }
}

/// A passage as stored.
#[derive(Debug, serde::Deserialize)]
struct Passage {
    vector: Vec<f32>,
    #[serde(default, with = "serde_bytes")]
    sig: Option<Vec<u8>>,
}

/// Waits until the project's vectors are held with `ops` operations; what is held.
async fn until_held(project: &str, ops: usize) -> (usize, usize) {
    settle(
        60,
        || async { held_vectors::held(project, MODEL) },
        |h: &Option<(usize, usize)>| h.is_some_and(|(n, _)| n == ops),
    )
    .await
    .unwrap_or_else(|| panic!("{project}: not held within a minute"))
}

#[tokio::test]
async fn held_vectors_rank_as_neo4j_and_follow_what_is_stored_and_deleted() {
    let (_server, app, _turn) = fake_embeddings().await;
    let store = store();
    let sid = app.session().await;
    let long = format!("{sid}-long");
    let content = "We walked along the harbour and counted the boats in the morning fog. \
                   The bakery on the corner sold out of rye bread before noon again. \
                   Login and authentication with auth all broke yesterday. \
                   My cousin repainted the garden shed a bright shade of yellow. \
                   Afterwards everyone argued about which film to watch tonight.";
    app.ops_sync(
        &sid,
        json!([
            {"id": long, "type": "message", "role": "user", "summary": "s", "content": content},
            {"id": format!("{sid}-a"), "type": "message", "role": "user", "summary": "s",
             "content": "the database migration is slow"},
            {"id": format!("{sid}-b"), "type": "message", "role": "assistant", "summary": "s",
             "content": "postgres latency doubled after the index change"},
            {"id": format!("{sid}-c"), "type": "tool_call", "summary": "ran the sql benchmark",
             "tool": "Bash"},
            {"id": format!("{sid}-d"), "type": "message", "role": "user", "summary": "s",
             "content": "yellow paint for the shed"}
        ]),
    )
    .await;
    let body = json!({"project": app.project, "query": "signin credentials failing"});
    until_embedded(&app, &body, &long).await;
    // The long turn's passages as stored before passages kept signatures.
    let signed = || async {
        store
            .fetch::<Passage>(
                neo4rs::query(
                    "MATCH (p:Passage {operation_id: $id}) \
                     RETURN p.embedding AS vector, p.embedding_sig AS sig ORDER BY p.n",
                )
                .param("id", long.as_str()),
            )
            .await
            .expect("read the passages")
    };
    store
        .run(
            neo4rs::query("MATCH (p:Passage {operation_id: $id}) REMOVE p.embedding_sig")
                .param("id", long.as_str()),
        )
        .await
        .expect("unsign the passages");
    assert!(signed().await.iter().all(|p| p.sig.is_none()));
    // Whatever the app's own searches held before is let go: the project is read afresh.
    held_vectors::forget(&app.project);

    let all = Filter {
        project: &app.project,
        types: None,
        sessions: None,
        exclude_session: None,
    };
    let messages = ["message".to_string()];
    let typed = Filter {
        types: Some(&messages),
        ..all
    };
    let queries = [
        "sql performance",
        "signin credentials failing",
        "garden shed",
    ];
    // Held or not yet (the app's own searches may have begun holding it), the answer is
    // Neo4j's; the project is held soon after.
    let v = fake_vector(queries[0]);
    let first = nearest(&store, &all, Vectors::Operations, MODEL, &v, 10, SCAN, None)
        .await
        .expect("first search");
    let neo4j = exact(&store, &all, Vectors::Operations, MODEL, &v, 10, SCAN)
        .await
        .expect("exact search");
    assert_alike(&first, &neo4j, "first search");
    let (ops, passages) = until_held(&app.project, 5).await;
    assert_eq!(passages, 5, "the long turn's five passages are held");
    // Read whole, their signatures are stored for the next read.
    let now = settle(30, signed, |rows: &Vec<Passage>| {
        rows.iter().all(|p| p.sig.is_some())
    })
    .await;
    assert_eq!(now.len(), 5);
    for p in now {
        assert_eq!(
            p.sig,
            signature::of(&p.vector),
            "a passage's signature is its vector's"
        );
    }

    // Held: each list as Neo4j compares it, by operations and by passages, with filters.
    for q in queries {
        let v = fake_vector(q);
        for of in [Vectors::Operations, Vectors::Passages] {
            for f in [&all, &typed] {
                let held = nearest(&store, f, of, MODEL, &v, 3, SCAN, Some(ops))
                    .await
                    .expect("held search");
                let neo4j = exact(&store, f, of, MODEL, &v, 3, SCAN)
                    .await
                    .expect("exact search");
                assert!(!held.is_empty(), "{q} {of:?}");
                assert_alike(&held, &neo4j, &format!("{q}, {of:?}, {:?}", f.types));
                assert!(held.iter().all(|r| r.text.is_some() && r.vectored));
            }
        }
    }
    let by_passage = nearest(
        &store,
        &all,
        Vectors::Passages,
        MODEL,
        &fake_vector("signin credentials failing"),
        1,
        SCAN,
        Some(ops),
    )
    .await
    .expect("passage search");
    assert_eq!(by_passage[0].id, long, "found by the passage that answers");

    // What the indexer stores after the project was read joins what is held.
    let other = app.session().await;
    let late = format!("{other}-late");
    app.ops_sync(
        &other,
        json!([{"id": late, "type": "message", "role": "user", "summary": "s",
                "content": "kubernetes pods evicted overnight"}]),
    )
    .await;
    let body = json!({"project": app.project, "query": "kubernetes pods evicted"});
    until_embedded(&app, &body, &late).await;
    until_held(&app.project, 6).await;
    let v = fake_vector("kubernetes pods evicted overnight");
    let held = nearest(&store, &all, Vectors::Operations, MODEL, &v, 1, SCAN, None)
        .await
        .expect("held search");
    assert_eq!(held[0].id, late);
    assert!(held[0].score > 0.99, "{held:?}");

    // Changed behind this process: the held list gives way to Neo4j's.
    store
        .run(
            neo4rs::query("MATCH (p:Passage {operation_id: $id}) DELETE p")
                .param("id", long.as_str()),
        )
        .await
        .expect("delete the passages");
    let v = fake_vector("signin credentials failing");
    let after = nearest(&store, &all, Vectors::Passages, MODEL, &v, 3, SCAN, None)
        .await
        .expect("passage search");
    assert!(after.iter().all(|r| r.id != long), "{after:?}");
    let (_, passages) = until_held(&app.project, 6).await;
    assert_eq!(passages, 0, "read again without the deleted passages");

    // A deleted session lets the project go; what is read again holds the rest.
    let (status, answer) = app.delete(&format!("/v1/sessions/{other}")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(held_vectors::held(&app.project, MODEL), None);
    let v = fake_vector("kubernetes pods evicted");
    let gone = nearest(&store, &all, Vectors::Operations, MODEL, &v, 10, SCAN, None)
        .await
        .expect("search after the delete");
    assert!(gone.iter().all(|r| r.id != late), "{gone:?}");
    until_held(&app.project, 5).await;
}
