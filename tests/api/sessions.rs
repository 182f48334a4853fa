use serde_json::json;

use crate::helpers::{count, split, TestApp};

#[tokio::test]
async fn start_is_idempotent_and_close_records_summary() {
    let app = TestApp::spawn().await;
    let body = json!({"project": app.project, "session_id": "s-idem", "agent": "claude-code", "task": "fix the parser"});
    let body = {
        let mut b = body;
        b["session_id"] = json!(format!("{}-s1", app.project));
        b
    };
    let (s1, b1) = app.post("/v1/sessions", &body).await;
    let (s2, b2) = app.post("/v1/sessions", &body).await;
    assert_eq!((s1, s2), (201, 201), "{b1} {b2}");
    assert_eq!(b1["session_id"], b2["session_id"]);
    let sid = b1["session_id"].as_str().unwrap();
    let n = count("MATCH (s:Session {project: $project})-[:IN]->(:Project {id: $project}) RETURN count(s) AS n", &app.project).await;
    assert_eq!(n, 1);

    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"summary": "parser fixed", "next_steps": ["add fuzzing", "update docs"]}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, row) = app.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(s, 200);
    assert_eq!(row["status"], "closed");
    assert_eq!(row["summary"], "parser fixed");
    assert_eq!(row["next_steps"], json!(["add fuzzing", "update docs"]));
    assert_eq!(row["task"], "fix the parser");
}

#[tokio::test]
async fn continues_links_sessions_of_the_same_project() {
    let app = TestApp::spawn().await;
    let first = app.session().await;
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "continues": first}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let n = count(
        "MATCH (:Session {project: $project})-[c:CONTINUES]->(:Session {project: $project}) RETURN count(c) AS n",
        &app.project,
    )
    .await;
    assert_eq!(n, 1);
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": app.project, "continues": "no-such-session"}),
        )
        .await;
    assert_eq!(s, 422, "{b}");
    assert_eq!(b["error"]["field"], "continues");
}

#[tokio::test]
async fn a_session_id_of_another_project_is_refused_without_saying_whose() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let other = format!("{}-other", app.project);
    let theirs = app.client_for(&other, "admin").await;
    let r = theirs
        .post(app.url("/v1/sessions"))
        .json(&json!({"project": other, "session_id": sid}))
        .send()
        .await
        .unwrap();
    let (s, b) = split(r).await;
    assert_eq!(s, 409, "{b}");
    assert_eq!(b["error"]["code"], "session_id_taken");
    assert!(
        !b.to_string().contains(&app.project),
        "does not reveal the owner"
    );
    // The other project's key sees nothing of the session.
    let r = theirs
        .get(app.url(&format!("/v1/sessions/{sid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = theirs
        .post(app.url(&format!("/v1/sessions/{sid}/operations")))
        .json(&json!({"operations": [{"type": "read", "summary": "x"}]}))
        .send()
        .await
        .unwrap();
    let (s, b) = split(r).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("session_not_found"))
    );
}

#[tokio::test]
async fn bad_session_input_gets_field_errors() {
    let app = TestApp::spawn().await;
    // A key only ever names its own project; anything else is forbidden, malformed or not.
    let (s, b) = app
        .post("/v1/sessions", &json!({"project": "bad project!"}))
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (403, Some("forbidden")));
    let sid = app.session().await;
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{sid}/close"),
            &json!({"status": "exploded"}),
        )
        .await;
    assert_eq!((s, b["error"]["field"].as_str()), (400, Some("status")));
    let (s, b) = app.post("/v1/sessions/nope/close", &json!({})).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("session_not_found"))
    );
}

#[tokio::test]
async fn idle_sessions_are_marked_abandoned() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let store = crate::helpers::store();
    store
        .run(
            neo4rs::query("MATCH (s:Session {id: $id}) SET s.last_activity_at = 0")
                .param("id", sid.as_str()),
        )
        .await
        .unwrap();
    let n = cairn::graph::sessions::abandon_idle(&store, 1, |m| {
        cairn::capture::summary::derive(m, cairn::config::Encoding::O200kBase)
    })
    .await
    .unwrap();
    assert!(n >= 1);
    let (_, row) = app.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(row["status"], "abandoned");
}

/// A child session (a subagent's work) is linked to its parent session and to the operation
/// that launched it, whichever arrives first; never to a session of another project.
#[tokio::test]
async fn child_sessions_link_to_parent_and_launching_operation_in_any_order() {
    let app = TestApp::spawn().await;
    let p = &app.project;
    let edges = |rel: &'static str| {
        let cypher = format!(
            "MATCH (c:Session {{project: $project}})-[:{rel}]->(x {{project: $project}}) RETURN count(*) AS n"
        );
        async move { count(&cypher, p).await }
    };
    // Child first: neither its parent nor the Task operation exist yet.
    let parent = format!("{p}-main");
    let child = cairn::claude::child_session_id(&parent, "a1");
    let launch = cairn::claude::mapping::operation_id(&parent, "toolu_1");
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": p, "session_id": child, "parent": parent,
                    "spawned_by": launch, "agent_type": "Explore", "task": "find the parser"}),
        )
        .await;
    assert!(s == 201 || s == 202, "{b}");
    let (s, b) = app
        .post("/v1/sessions", &json!({"project": p, "session_id": parent}))
        .await;
    assert!(s == 201 || s == 202, "{b}");
    app.ops_sync(
        &parent,
        json!([{"id": launch, "type": "tool_call", "tool": "Task", "summary": "subagent: find"}]),
    )
    .await;
    crate::helpers::eventually(10, "CHILD_OF and SPAWNED_BY", || async {
        edges("CHILD_OF").await == 1 && edges("SPAWNED_BY").await == 1
    })
    .await;
    let (_, row) = app.get(&format!("/v1/sessions/{child}")).await;
    assert_eq!(
        (&row["parent"], &row["agent_type"], &row["spawned_by"]),
        (&json!(parent), &json!("Explore"), &json!(launch))
    );

    // Parent and operation first: the child links at its start. A later start of a known
    // child adds the launching operation once it is known.
    let child2 = cairn::claude::child_session_id(&parent, "a2");
    let launch2 = cairn::claude::mapping::operation_id(&parent, "toolu_2");
    app.ops_sync(
        &parent,
        json!([{"id": launch2, "type": "tool_call", "tool": "Agent", "summary": "subagent: review"}]),
    )
    .await;
    for body in [
        json!({"project": p, "session_id": child2, "parent": parent}),
        json!({"project": p, "session_id": child2, "parent": parent, "spawned_by": launch2}),
    ] {
        let (s, b) = app.post("/v1/sessions", &body).await;
        assert!(s == 201 || s == 202, "{b}");
    }
    crate::helpers::eventually(10, "the second child's links", || async {
        edges("CHILD_OF").await == 2 && edges("SPAWNED_BY").await == 2
    })
    .await;
    // The parent's chain holds only its own operations.
    let chain = count(
        &format!(
            "MATCH (o:Operation)-[:PART_OF]->(:Session {{id: '{parent}'}}) RETURN count(o) AS n"
        ),
        p,
    )
    .await;
    assert_eq!(chain, 2);
    // Reconstruction of the parent names each child in one line.
    let (s, rec) = app
        .get(&format!("/v1/sessions/{parent}/reconstruction"))
        .await;
    assert_eq!(s, 200, "{rec}");
    assert_eq!(rec["children"].as_array().map(Vec::len), Some(2), "{rec}");
    let narrative = rec["narrative"].as_str().unwrap();
    assert!(
        narrative.contains(&format!(
            "subagent Explore (`{child}`, 0 operations, active): find the parser"
        )),
        "{narrative}"
    );

    // A parent in another project is refused.
    let other = format!("{p}-other");
    let client = app.client_for(&other, "write").await;
    let r = client
        .post(app.url("/v1/sessions"))
        .json(&json!({"project": other, "session_id": format!("{other}-s")}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16() / 100, 2);
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": p, "session_id": format!("{p}-c3"), "parent": format!("{other}-s")}),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (422, Some("unknown_session")),
        "{b}"
    );
}
