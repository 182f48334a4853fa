use serde_json::json;

use crate::helpers::{count, TestApp};

#[tokio::test]
async fn decisions_supersede_by_subject_and_keep_alternatives() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let first = json!({
        "project": app.project, "session_id": sid, "subject": "Database engine",
        "choice": "Postgres", "rationale": "team knows it", "alternatives": ["MySQL", "SQLite"],
        "confidence": 0.8, "files": ["db/schema.sql"]
    });
    let (s, a) = app.post("/v1/decisions", &first).await;
    assert_eq!(s, 201, "{a}");
    assert!(a["supersedes"].is_null());
    let second = json!({
        "project": app.project, "session_id": sid, "subject": "  database   ENGINE ",
        "choice": "Neo4j", "rationale": "the data is a graph", "alternatives": ["Postgres"]
    });
    let (s, b) = app.post("/v1/decisions", &second).await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["supersedes"], a["id"]);

    let (s, list) = app
        .get(&format!(
            "/v1/decisions?project={}&subject=database%20engine",
            app.project
        ))
        .await;
    assert_eq!(s, 200);
    let d = list["decisions"].as_array().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["choice"], "Neo4j", "newest first");
    assert_eq!(d[0]["supersedes"], a["id"]);
    assert!(d[0]["superseded_by"].is_null());
    assert_eq!(d[1]["superseded_by"], b["id"]);
    assert_eq!(d[1]["alternatives"], json!(["MySQL", "SQLite"]));

    let p = &app.project;
    assert_eq!(
        count(
            "MATCH (:Decision {project: $project})-[:REJECTED]->(o:Option) RETURN count(o) AS n",
            p
        )
        .await,
        3
    );
    assert_eq!(
        count(
            "MATCH (:Decision {project: $project})-[:CHOSE]->(o:Option) RETURN count(o) AS n",
            p
        )
        .await,
        2
    );
    // Recorded in the session's chain, with its files touched.
    assert_eq!(count("MATCH (o:Operation {project: $project, type: 'decision'})-[:RECORDS]->(:Decision) RETURN count(o) AS n", p).await, 2);
    assert_eq!(
        count("MATCH (:Operation {project: $project, type: 'decision'})-[:TOUCHED]->(f:File {path: 'db/schema.sql'}) RETURN count(f) AS n", p).await,
        1
    );
    let (_, by_file) = app
        .get(&format!("/v1/decisions?project={p}&file=db/schema.sql"))
        .await;
    assert_eq!(by_file["decisions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn decisions_inform_beliefs_and_validate_input() {
    let app = TestApp::spawn().await;
    let (_, b) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "graphs fit decision history"}),
        )
        .await;
    let belief = b["id"].as_str().unwrap();
    let (s, d) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "subject": "store", "choice": "neo4j", "rationale": "graph",
                    "affects_beliefs": [belief, {"id": belief, "effect": "contradicts", "weight": 0.2}]}),
        )
        .await;
    assert_eq!(s, 201, "{d}");
    let (_, list) = app
        .get(&format!("/v1/beliefs?project={}", app.project))
        .await;
    assert_eq!(
        list["beliefs"][0]["supporting"].as_i64().unwrap()
            + list["beliefs"][0]["contradicting"].as_i64().unwrap(),
        1,
        "one INFORMS edge per decision and belief"
    );

    let bad = [
        (
            json!({"project": app.project, "subject": "", "choice": "a", "rationale": "b"}),
            "subject",
        ),
        (
            json!({"project": app.project, "subject": "s", "choice": "a", "rationale": "b", "confidence": 2}),
            "confidence",
        ),
        (
            json!({"project": app.project, "subject": "s", "choice": "a", "rationale": "b", "affects_beliefs": ["nope"]}),
            "affects_beliefs[0]",
        ),
        (
            json!({"project": app.project, "subject": "s", "choice": "a", "rationale": "b", "session_id": "no-such"}),
            "session_id",
        ),
    ];
    for (body, field) in bad {
        let (s, b) = app.post("/v1/decisions", &body).await;
        assert!((400..500).contains(&s), "{s} {b}");
        assert_eq!(b["error"]["field"], field, "{b}");
    }
    assert_eq!(
        count(
            "MATCH (d:Decision {project: $project}) RETURN count(d) AS n",
            &app.project
        )
        .await,
        1
    );
}
