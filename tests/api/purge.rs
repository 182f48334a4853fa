use serde_json::json;

use crate::helpers::{count, TestApp};

/// Every node a project owns, label by label (index-backed, unlike a label-less scan).
const OWNED: &str = "CALL {
    MATCH (n:Project {id: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Session {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Operation {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Decision {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Option {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Belief {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Pattern {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:Memory {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:File {project: $project}) RETURN count(n) AS c
    UNION ALL MATCH (n:ExtractionRun {project: $project}) RETURN count(n) AS c
  } RETURN sum(c) AS n";

async fn fill(app: &crate::helpers::TestApp, sid: &str) {
    let id = |s: &str| format!("{sid}-{s}");
    app.ops_sync(
        sid,
        json!([
            {"id": id("r"), "type": "read", "summary": "read", "files_read": ["only-here.rs"]},
            {"id": id("w"), "type": "write", "summary": "write", "files_modified": ["shared.rs"], "triggered_by": id("r")}
        ]),
    )
    .await;
    let (s, _) = app
        .post("/v1/decisions", &json!({"project": app.project, "session_id": sid, "subject": format!("subject {sid}"), "choice": "a", "rationale": "b", "alternatives": ["c"]}))
        .await;
    assert_eq!(s, 201);
    let (s, _) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": sid, "kind": "fact", "content": "x"}),
        )
        .await;
    assert_eq!(s, 201);
}

#[tokio::test]
async fn deleting_a_session_leaves_no_orphans_and_spares_the_rest() {
    let app = TestApp::spawn().await;
    let keep = app.session().await;
    let gone = app.session().await;
    fill(&app, &keep).await;
    let before_keep = count(OWNED, &app.project).await;
    fill(&app, &gone).await;
    app.ops_sync(
        &gone,
        json!([{"type": "write", "summary": "w", "files_modified": ["shared.rs"]}]),
    )
    .await;

    let (s, b) = app.delete(&format!("/v1/sessions/{gone}")).await;
    assert_eq!(s, 200, "{b}");
    // Everything the deleted session owned is gone: what is left is exactly what the kept one
    // had (its files included, the deleted session's only-here file removed).
    // `before_keep` counted the second session's own node too (started before it).
    assert_eq!(count(OWNED, &app.project).await, before_keep - 1);
    let dangling = count(
        "MATCH (n:Operation|Decision|Memory) WHERE n.project = $project AND n.session_id IS NOT NULL \
         AND NOT EXISTS { MATCH (s:Session {id: n.session_id}) } RETURN count(n) AS n",
        &app.project,
    )
    .await;
    assert_eq!(dangling, 0);
    let (s, _) = app.delete(&format!("/v1/sessions/{gone}")).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn deleting_a_project_removes_every_node_it_owns() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    fill(&app, &sid).await;
    let (_, b) = app
        .post(
            "/v1/beliefs",
            &json!({"project": app.project, "content": "c"}),
        )
        .await;
    assert!(b["id"].is_string());
    assert!(count(OWNED, &app.project).await > 8);
    let (s, b) = app.delete(&format!("/v1/projects/{}", app.project)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(count(OWNED, &app.project).await, 0);
    assert_eq!(
        count(
            "MATCH (p:Project {id: $project}) RETURN count(p) AS n",
            &app.project
        )
        .await,
        0
    );
}
