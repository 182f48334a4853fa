//! Every text field of every write route, filled with [`PAYLOADS`], is read back through the
//! API exactly as sent (paths in their documented normalised form), and the database holds
//! exactly what was written: the project's node counts by label are known, a sentinel
//! project is untouched, and no injected clause left a trace.

use std::collections::{BTreeMap, BTreeSet};

use cairn::claude::mapping::operation_id;
use cairn::domain::paths::normalize;
use serde_json::{json, Value};

use super::{assert_error, assert_no_escape, labels, query, seg, Sentinel, PAYLOADS};
use crate::helpers::{eventually, store, TestApp};

const N: i64 = PAYLOADS.len() as i64;

/// The label counts a project holds after these tests: one key (and its audit event), the
/// project node, and `rest`.
fn expected(rest: &[(&str, i64)]) -> BTreeMap<String, i64> {
    [("ApiKey", 1), ("AuditEvent", 1), ("Project", 1)]
        .iter()
        .chain(rest)
        .filter(|(_, n)| *n > 0)
        .map(|(l, n)| (l.to_string(), *n))
        .collect()
}

/// The app's project holds exactly the nodes [`expected`] names.
async fn assert_holds(app: &TestApp, rest: &[(&str, i64)]) {
    assert_eq!(
        labels(&app.project).await,
        expected(rest),
        "{}",
        app.project
    );
}

/// `paths` as stored: normalised against `cwd`, deduplicated in order.
fn stored_paths(paths: &[String], cwd: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        let n = normalize(p, cwd);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Starts a session of the app's project with the fields of `fields`; returns its id.
async fn start(app: &TestApp, fields: Value) -> String {
    let mut body = json!({"project": app.project});
    body.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    let (s, b) = app.post("/v1/sessions", &body).await;
    assert_eq!(s, 201, "{body}: {b}");
    b["session_id"].as_str().expect("session id").to_string()
}

async fn reconstruction(app: &TestApp, sid: &str) -> Value {
    let (s, r) = app
        .get(&format!(
            "/v1/sessions/{}/reconstruction?max_operations=5000",
            seg(sid)
        ))
        .await;
    assert_eq!(s, 200, "{r}");
    r
}

/// The reconstructed operations of `sid` by id.
async fn operations(app: &TestApp, sid: &str) -> BTreeMap<String, Value> {
    reconstruction(app, sid).await["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|o| (o["id"].as_str().expect("id").to_string(), o.clone()))
        .collect()
}

/// A string property of the operation or memory `id`, straight from Neo4j (for the fields no
/// read route returns).
async fn property(id: &str, key: &str) -> Option<String> {
    let rows = store()
        .rows(
            neo4rs::query(
                "CALL () { MATCH (n:Operation {id: $id}) RETURN n
                           UNION MATCH (n:Memory {id: $id}) RETURN n }
                 RETURN n[$key] AS v",
            )
            .param("id", id)
            .param("key", key),
        )
        .await
        .expect("property query");
    rows.first()
        .and_then(|r| r.get::<Option<String>>("v").ok().flatten())
}

#[tokio::test]
async fn session_fields_round_trip_verbatim() {
    let app = TestApp::spawn().await;
    let sentinel = Sentinel::plant(&app).await;
    let mut previous: Option<String> = None;
    for (i, p) in PAYLOADS.iter().enumerate() {
        let sid = format!("{}-{i} {p}", app.project);
        let fields = json!({"session_id": sid, "agent": p, "task": p, "cwd": p,
                            "continues": previous});
        assert_eq!(start(&app, fields).await, sid);
        let next = vec![p.to_string(), format!("then {p}")];
        let (s, b) = app
            .post(
                &format!("/v1/sessions/{}/close", seg(&sid)),
                &json!({"summary": p, "next_steps": next}),
            )
            .await;
        assert_eq!(s, 201, "{p}: {b}");
        let (s, row) = app.get(&format!("/v1/sessions/{}", seg(&sid))).await;
        assert_eq!(s, 200, "{p}: {row}");
        for key in ["agent", "task", "cwd", "summary"] {
            assert_eq!(row[key].as_str(), Some(*p), "{key}: {row}");
        }
        assert_eq!(
            (row["id"].as_str(), row["continues"].as_str()),
            (Some(sid.as_str()), previous.as_deref())
        );
        assert_eq!(row["next_steps"], json!(next));
        let r = reconstruction(&app, &sid).await;
        assert_eq!(r["task"].as_str(), Some(*p));
        let open: Vec<&str> = r["unfinished"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|u| u["content"].as_str())
            .collect();
        assert_eq!(open, next, "{r}");
        previous = Some(sid);
    }
    assert_holds(&app, &[("Session", N)]).await;
    sentinel.assert_intact().await;
}

#[tokio::test]
async fn operation_fields_round_trip_verbatim() {
    let app = TestApp::spawn().await;
    let sentinel = Sentinel::plant(&app).await;
    let cwd = "/repo";
    let sid = start(&app, json!({"cwd": cwd})).await;
    let mut files = BTreeSet::new();
    for (i, p) in PAYLOADS.iter().enumerate() {
        let id = |kind: &str| format!("{}/{i}/{kind} {p}", app.project);
        let read_paths = vec![p.to_string(), format!("{cwd}/{p}")];
        let context = json!({"cwd": cwd, "note": p, *p: [p, {"deep": p}]});
        let todos = json!([{"content": p, "status": "in_progress", "id": p}]);
        app.ops_sync(
            &sid,
            json!([
                {"id": id("read"), "type": "read", "target": p, "summary": p, "tool": p,
                 "files_read": read_paths, "context": context, "rationale": p},
                {"id": id("write"), "type": "write", "summary": p, "files_modified": [p],
                 "triggered_by": id("read"), "rationale": p},
                {"id": id("tool"), "type": "tool_call", "target": p, "summary": p, "tool": p,
                 "status": "failed"},
                {"id": id("search"), "type": "search", "target": p, "summary": p},
                {"id": id("decision"), "type": "decision", "summary": p, "rationale": p},
                {"id": id("user"), "type": "message", "role": "user", "content": p},
                {"id": id("assistant"), "type": "message", "role": "assistant", "content": p,
                 "summary": p},
                {"id": id("todo"), "type": "todo", "todos": todos},
            ]),
        )
        .await;
        let ops = operations(&app, &sid).await;
        let op = |kind: &str| {
            ops.get(&id(kind))
                .unwrap_or_else(|| panic!("{kind} of {p}"))
        };
        for kind in ["read", "tool", "search"] {
            assert_eq!(op(kind)["target"].as_str(), Some(*p), "{kind}");
        }
        for kind in [
            "read",
            "write",
            "tool",
            "search",
            "decision",
            "user",
            "assistant",
        ] {
            assert_eq!(op(kind)["summary"].as_str(), Some(*p), "{kind}");
        }
        for kind in ["read", "tool"] {
            assert_eq!(op(kind)["tool"].as_str(), Some(*p), "{kind}");
        }
        for kind in ["user", "assistant"] {
            assert_eq!(op(kind)["content"].as_str(), Some(*p), "{kind}");
        }
        let read_stored = stored_paths(&read_paths, Some(cwd));
        let write_stored = stored_paths(&[p.to_string()], Some(cwd));
        assert_eq!(op("read")["files_read"], json!(read_stored));
        assert_eq!(op("write")["files_modified"], json!(write_stored));
        files.extend(read_stored.into_iter().chain(write_stored));
        let stored_todos: Value =
            serde_json::from_str(op("todo")["todos"].as_str().expect("todos")).unwrap();
        assert_eq!(stored_todos, todos);
        for kind in ["read", "write", "decision"] {
            assert_eq!(property(&id(kind), "rationale").await.as_deref(), Some(*p));
        }
        let stored_context = property(&id("read"), "context").await.unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&stored_context).unwrap(),
            context
        );
    }
    let (s, w) = app
        .get(&format!(
            "/v1/sessions/{}/window?token_limit=100000",
            seg(&sid)
        ))
        .await;
    assert_eq!(s, 200, "{w}");
    let text = w["text"].as_str().unwrap();
    for p in PAYLOADS {
        assert!(text.contains(&format!("User: {p}")), "{p} in {text}");
    }
    assert_eq!(
        crate::helpers::count(
            "MATCH (:Operation {project: $project})-[t:TRIGGERED_BY]->() RETURN count(t) AS n",
            &app.project
        )
        .await,
        N
    );
    assert_holds(
        &app,
        &[
            ("Session", 1),
            ("Operation", 8 * N),
            ("File", files.len() as i64),
        ],
    )
    .await;
    sentinel.assert_intact().await;
}

#[tokio::test]
async fn decision_belief_and_memory_fields_round_trip_verbatim() {
    let app = TestApp::spawn().await;
    let sentinel = Sentinel::plant(&app).await;
    let sid = format!("{} {}", app.project, PAYLOADS[0]);
    assert_eq!(start(&app, json!({"session_id": sid})).await, sid);
    let mut files = BTreeSet::new();
    for (i, p) in PAYLOADS.iter().enumerate() {
        let alternatives = json!([p, format!("not {p}")]);
        let sent_files = vec![p.to_string(), format!("docs/{i}/{p}.md")];
        let (s, d) = app
            .post(
                "/v1/decisions",
                &json!({"project": app.project, "session_id": sid, "subject": p, "choice": p,
                        "rationale": p, "alternatives": alternatives, "files": sent_files}),
            )
            .await;
        assert_eq!(s, 201, "{p}: {d}");
        let (s, list) = app
            .get(&format!(
                "/v1/decisions?{}",
                query(&[("project", &app.project), ("subject", p)])
            ))
            .await;
        assert_eq!(s, 200, "{list}");
        let found = list["decisions"].as_array().unwrap();
        assert_eq!(found.len(), 1, "{p}: {list}");
        let stored_files = stored_paths(&sent_files, None);
        for key in ["subject", "choice", "rationale"] {
            assert_eq!(found[0][key].as_str(), Some(*p), "{key}");
        }
        assert_eq!(
            (
                &found[0]["id"],
                &found[0]["session_id"],
                &found[0]["alternatives"],
                &found[0]["files"]
            ),
            (&d["id"], &json!(sid), &alternatives, &json!(stored_files))
        );
        let (s, by_file) = app
            .get(&format!(
                "/v1/decisions?{}",
                query(&[("project", &app.project), ("file", &stored_files[1])])
            ))
            .await;
        assert_eq!(s, 200, "{by_file}");
        let by_file: Vec<&Value> = by_file["decisions"].as_array().unwrap().iter().collect();
        assert_eq!(by_file.len(), 1, "{p}: {by_file:?}");
        assert_eq!(by_file[0]["id"], d["id"]);
        files.extend(stored_files);

        let (s, b) = app
            .post(
                "/v1/beliefs",
                &json!({"project": app.project, "content": p, "category": p}),
            )
            .await;
        assert_eq!(s, 200, "{p}: {b}");
        let (_, beliefs) = app
            .get(&format!(
                "/v1/beliefs?{}",
                query(&[("project", &app.project)])
            ))
            .await;
        let belief = beliefs["beliefs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == b["id"])
            .cloned()
            .expect("belief listed");
        assert_eq!(
            (belief["content"].as_str(), belief["category"].as_str()),
            (Some(*p), Some(*p))
        );

        let (s, m) = app
            .post(
                "/v1/memories",
                &json!({"project": app.project, "session_id": sid, "kind": "lesson", "content": p}),
            )
            .await;
        assert_eq!(s, 201, "{p}: {m}");
        assert_eq!(
            property(m["id"].as_str().unwrap(), "content")
                .await
                .as_deref(),
            Some(*p)
        );
    }
    let (s, c) = app
        .post(
            "/v1/context",
            &json!({"project": app.project, "session_id": sid, "budget_tokens": 30000}),
        )
        .await;
    assert_eq!(s, 200, "{c}");
    let text = c["text"].as_str().unwrap();
    // Verbatim, but for what acts instead of printing (a direction override, blanked).
    for p in PAYLOADS {
        let shown = cairn::domain::shown::blanked(p);
        assert!(
            text.contains(&format!("- (lesson) {shown}")),
            "{p} in {text}"
        );
    }
    assert!(!text.contains('\u{202E}'), "{text}");
    let subjects: BTreeSet<String> = reconstruction(&app, &sid).await["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["subject"].as_str().map(str::to_string))
        .collect();
    assert_eq!(subjects, PAYLOADS.iter().map(|p| p.to_string()).collect());
    assert_holds(
        &app,
        &[
            ("Session", 1),
            ("Operation", N),
            ("Decision", N),
            ("Option", 3 * N),
            ("File", files.len() as i64),
            ("Belief", N),
            ("Memory", N),
        ],
    )
    .await;
    sentinel.assert_intact().await;
}

#[tokio::test]
async fn hook_events_round_trip_verbatim() {
    let app = TestApp::spawn().await;
    let sentinel = Sentinel::plant(&app).await;
    let cwd = "/repo";
    let mut files = BTreeSet::new();
    for (i, p) in PAYLOADS.iter().enumerate() {
        let sid = format!("{}-{i} {p}", app.project);
        let events = [
            json!({"hook_event_name": "SessionStart", "source": p}),
            json!({"hook_event_name": "UserPromptSubmit", "prompt": p}),
            json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": p,
                   "tool_input": {"command": p, "description": p}, "tool_response": {"stdout": p}}),
            json!({"hook_event_name": "PostToolUse", "tool_name": "Read",
                   "tool_use_id": format!("read {p}"), "tool_input": {"file_path": p}}),
            json!({"hook_event_name": "Stop", "last_assistant_message": p}),
        ];
        for mut e in events {
            e["session_id"] = json!(sid);
            e["cwd"] = json!(cwd);
            e["cairn_event_id"] = json!(format!("{sid} {}", e["hook_event_name"]));
            let (s, b) = app.post("/v1/hooks/claude-code", &e).await;
            assert_eq!(s, 200, "{e}: {b}");
        }
        eventually(15, "hook operations in neo4j", || async {
            operations(&app, &sid).await.len() == 4
        })
        .await;
        let ops: Vec<Value> = operations(&app, &sid).await.into_values().collect();
        let by = |tool: &str| {
            ops.iter()
                .find(|o| o["tool"].as_str() == Some(tool))
                .unwrap_or_else(|| panic!("{tool} of {p}"))
        };
        assert_eq!(
            by("Bash")["id"].as_str(),
            Some(operation_id(&sid, p).as_str())
        );
        assert_eq!(
            (
                by("Bash")["target"].as_str(),
                by("Bash")["summary"].as_str()
            ),
            (Some(*p), Some(*p))
        );
        let read_files = stored_paths(&[p.to_string()], Some(cwd));
        assert_eq!(
            (by("Read")["target"].as_str(), &by("Read")["files_read"]),
            (Some(*p), &json!(read_files))
        );
        files.extend(read_files);
        let turns: BTreeSet<(&str, &str)> = ops
            .iter()
            .filter_map(|o| Some((o["role"].as_str()?, o["content"].as_str()?)))
            .collect();
        assert_eq!(turns, BTreeSet::from([("user", *p), ("assistant", *p)]));
    }
    assert_holds(
        &app,
        &[
            ("Session", N),
            ("Operation", 4 * N),
            ("File", files.len() as i64),
        ],
    )
    .await;
    sentinel.assert_intact().await;
}

#[tokio::test]
async fn read_routes_take_hostile_queries() {
    let app = TestApp::spawn().await;
    let sentinel = Sentinel::plant(&app).await;
    app.session().await;
    for p in PAYLOADS {
        let (s, b) = app
            .post(
                "/v1/sessions/search",
                &json!({"project": app.project, "query": p}),
            )
            .await;
        assert_eq!(s, 200, "search {p}: {b}");
        let (s, b) = app
            .post(
                "/v1/context",
                &json!({"project": app.project, "task": p, "budget_tokens": 500}),
            )
            .await;
        assert_eq!(s, 200, "context {p}: {b}");
        for path in [
            format!(
                "/v1/knowledge?{}",
                query(&[("project", &app.project), ("files", p)])
            ),
            format!(
                "/v1/handover?{}",
                query(&[("project", &app.project), ("session_id", p)])
            ),
            format!("/v1/sessions/{}", seg(p)),
            format!("/v1/sessions/{}/reconstruction", seg(p)),
            format!("/v1/beliefs/{}/approve", seg(p)),
        ] {
            let (s, b) = if path.ends_with("/approve") {
                app.post(&path, &json!({})).await
            } else {
                app.get(&path).await
            };
            assert!(s == 200 || s == 404, "{path}: {s} {b}");
        }
    }
    assert_holds(&app, &[("Session", 1)]).await;
    sentinel.assert_intact().await;
}

#[tokio::test]
async fn padded_session_ids_address_the_session_they_name() {
    let app = TestApp::spawn().await;
    let sid = format!("{}-padded", app.project);
    let padded = format!("  {sid}\t");
    assert_eq!(start(&app, json!({"session_id": padded})).await, sid);
    let path = |rest: &str| format!("/v1/sessions/{}{rest}", seg(&padded));
    app.ops_sync(&padded, json!([{"type": "read", "summary": "r"}]))
        .await;
    let (s, b) = app
        .post(
            "/v1/decisions",
            &json!({"project": app.project, "session_id": padded, "subject": "s", "choice": "c",
                    "rationale": "r"}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = app
        .post(
            "/v1/memories",
            &json!({"project": app.project, "session_id": padded, "kind": "fact", "content": "m"}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(operations(&app, &sid).await.len(), 2, "read and decision");
    let (s, b) = app.post(&path("/close"), &json!({"summary": "done"})).await;
    assert_eq!(s, 201, "{b}");
    let (_, row) = app.get(&path("")).await;
    assert_eq!(
        (row["id"].as_str(), row["status"].as_str()),
        (Some(sid.as_str()), Some("closed")),
        "{row}"
    );
    let (s, b) = app.delete(&path("")).await;
    assert_eq!(s, 200, "{b}");
    assert_holds(&app, &[]).await;
}

#[tokio::test]
async fn hostile_values_in_checked_fields_are_refused_and_write_nothing() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let before = labels(&app.project).await;
    let ops = format!("/v1/sessions/{}/operations?sync=true", seg(&sid));
    for p in PAYLOADS {
        let op = |extra: Value| {
            let mut o = json!({"type": "read", "summary": "s"});
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"operations": [o]})
        };
        let refusals = [
            (
                "/v1/sessions".to_string(),
                json!({"project": p}),
                403,
                "forbidden",
            ),
            (
                ops.clone(),
                op(json!({"type": p})),
                422,
                "unknown_operation_type",
            ),
            (
                ops.clone(),
                op(json!({"triggered_by": p})),
                422,
                "unknown_triggered_by",
            ),
            (
                ops.clone(),
                op(json!({"informs_belief": p})),
                422,
                "unknown_belief",
            ),
            (ops.clone(), op(json!({"effect": p})), 400, "invalid_effect"),
            (ops.clone(), op(json!({"status": p})), 400, "invalid_status"),
            (ops.clone(), op(json!({"at": p})), 400, "invalid_timestamp"),
            (
                ops.clone(),
                op(json!({"context": p})),
                400,
                "invalid_context",
            ),
            (
                ops.clone(),
                op(json!({"type": "todo", "todos": [{"content": "c", "status": p}]})),
                400,
                "invalid_todo_status",
            ),
            (
                "/v1/memories".to_string(),
                json!({"project": app.project, "kind": p, "content": "c"}),
                400,
                "invalid_memory_kind",
            ),
            (
                "/v1/beliefs".to_string(),
                json!({"project": app.project, "content": "c", "status": p}),
                400,
                "invalid_status",
            ),
            (
                "/v1/decisions".to_string(),
                json!({"project": app.project, "subject": "s", "choice": "c", "rationale": "r",
                       "affects_beliefs": [p]}),
                422,
                "unknown_belief",
            ),
            (
                format!("/v1/sessions/{}/close", seg(&sid)),
                json!({"status": p}),
                400,
                "invalid_status",
            ),
        ];
        for (path, body, status, code) in refusals {
            let answer = app.post(&path, &body).await;
            assert_error(&answer, status, code, &format!("{path} {body}"));
        }
    }
    assert_eq!(
        labels(&app.project).await,
        before,
        "a refused request wrote"
    );
    assert_no_escape().await;
}

#[tokio::test]
async fn control_characters_are_kept_in_text_and_refused_in_ids_and_paths() {
    let app = TestApp::spawn().await;
    let sid = app.session().await;
    let text = "nul\0 bell\u{7} escape\u{1b}[31m del\u{7f} line\r\nbreak";
    let id = format!("{}-ctl", app.project);
    app.ops_sync(
        &sid,
        json!([{"id": id, "type": "message", "role": "user", "content": text, "summary": text}]),
    )
    .await;
    let op = &operations(&app, &sid).await[&id];
    assert_eq!(
        (op["content"].as_str(), op["summary"].as_str()),
        (Some(text), Some(text))
    );
    let ops = format!("/v1/sessions/{}/operations", seg(&sid));
    for (body, code) in [
        (
            json!({"id": "a\0b", "type": "read", "summary": "s"}),
            "invalid_id",
        ),
        (
            json!({"type": "read", "summary": "s", "files_read": ["a\0b.rs"]}),
            "invalid_path",
        ),
    ] {
        let answer = app.post(&ops, &json!({"operations": [body]})).await;
        assert_error(&answer, 400, code, &body.to_string());
    }
    assert_holds(&app, &[("Session", 1), ("Operation", 1)]).await;
}
