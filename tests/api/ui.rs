//! The web UI over plain HTTP (no browser): sign-in cookies and their flags, the security
//! headers, CSRF and origin checks, revocation, sign-out, cross-project isolation, escaping of
//! hostile stored text, and what each page shows. The browser drives it in `ui_browser.rs`.

use reqwest::header;
use serde_json::json;

use crate::helpers::{mint_key, TestApp};

/// Markup an agent may capture; it must reach the page as text. `document.title` changes
/// if any of it runs.
pub const MARKUP: &[&str] = &[
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "\"><svg onload=\"document.title='pwned'\">",
    "</textarea><iframe src=javascript:alert(1)>",
];

const FORM: &str = "application/x-www-form-urlencoded";

/// What a seeded project holds, by id.
pub struct Seeded {
    pub session: String,
    pub child: String,
    pub hostile: String,
    pub belief: String,
}

/// A project with a closed session (reads, a write, superseded decisions, a todo, evidence
/// for a proposed belief), a child session, and a session whose task and summary are hostile
/// markup.
pub async fn seed(app: &TestApp) -> Seeded {
    let p = &app.project;
    let (s, b) = app
        .post("/v1/beliefs", &json!({"project": p, "content": "Redis keeps the cache warm across deploys", "status": "proposed", "conviction": 0.6}))
        .await;
    assert_eq!(s, 200, "{b}");
    let belief = b["id"].as_str().unwrap().to_string();
    let (s, b) = app
        .post(
            "/v1/sessions",
            &json!({"project": p, "agent": "claude-code", "task": "Move the cache to Redis"}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let session = b["session_id"].as_str().unwrap().to_string();
    app.ops_sync(
        &session,
        json!([
            {"type": "read", "summary": "read the cache module", "files_read": ["src/cache.rs"]},
            {"type": "write", "summary": "swap the cache for a Redis client", "files_modified": ["src/cache.rs"],
             "informs_belief": belief, "effect": "supports", "weight": 0.8},
            {"type": "todo", "todos": [
                {"content": "benchmark the Redis cache", "status": "pending"},
                {"content": "write the client", "status": "completed"}]},
        ]),
    )
    .await;
    for (choice, alternatives) in [
        ("memcached", vec!["redis"]),
        ("redis", vec!["memcached", "in-process LRU"]),
    ] {
        let (s, b) = app
            .post("/v1/decisions", &json!({"project": p, "session_id": session, "subject": "cache backend",
                "choice": choice, "rationale": "shared across the web workers", "alternatives": alternatives,
                "files": ["src/cache.rs"]}))
            .await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, b) = app
        .post("/v1/sessions", &json!({"project": p, "agent": "claude-code", "task": "Explore the cache call sites", "parent": session}))
        .await;
    assert_eq!(s, 201, "{b}");
    let child = b["session_id"].as_str().unwrap().to_string();
    let (s, b) = app
        .post(&format!("/v1/sessions/{session}/close"), &json!({"summary": "Moved the cache to Redis behind a trait", "next_steps": ["drop the old LRU"]}))
        .await;
    assert!(s == 200 || s == 201, "{s} {b}");
    let hostile_text = MARKUP.join(" ");
    let (s, b) = app
        .post("/v1/sessions", &json!({"project": p, "agent": "claude-code", "task": format!("hostile task {hostile_text}")}))
        .await;
    assert_eq!(s, 201, "{b}");
    let hostile = b["session_id"].as_str().unwrap().to_string();
    app.ops_sync(
        &hostile,
        json!([{"type": "message", "role": "user", "summary": format!("hostile turn {hostile_text}"), "content": hostile_text}]),
    )
    .await;
    let (s, b) = app
        .post(
            &format!("/v1/sessions/{hostile}/close"),
            &json!({"summary": format!("hostile summary {hostile_text}")}),
        )
        .await;
    assert!(s == 200 || s == 201, "{s} {b}");
    Seeded {
        session,
        child,
        hostile,
        belief,
    }
}

/// A client that keeps no cookies and follows no redirects: each step is asserted.
pub fn browserless() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Posts `key` to the sign-in form, as a browser does.
async fn post_sign_in(app: &TestApp, key: &str) -> reqwest::Response {
    browserless()
        .post(app.url("/ui/signin"))
        .header(header::CONTENT_TYPE, FORM)
        .body(crate::hostile::query(&[("key", key)]))
        .send()
        .await
        .unwrap()
}

/// Signs in with `key`; the cookie pair (`cairn_ui=…`) and the whole `Set-Cookie` value.
pub async fn sign_in(app: &TestApp, key: &str) -> (String, String) {
    let r = post_sign_in(app, key).await;
    assert_eq!(r.status(), 303, "sign-in redirects to the project");
    assert_eq!(r.headers()[header::LOCATION], "/ui");
    let set = r.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_string();
    let pair = set.split(';').next().unwrap().to_string();
    (pair, set)
}

/// GETs `path` with the sign-in cookie: status, headers, body.
pub async fn page(app: &TestApp, cookie: &str, path: &str) -> (u16, header::HeaderMap, String) {
    let r = browserless()
        .get(app.url(path))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.text().await.unwrap())
}

/// The CSRF token of the first form on a page.
pub fn csrf(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token")
        + 19;
    html[at..at + 64].to_string()
}

async fn post_form(
    app: &TestApp,
    cookie: &str,
    path: &str,
    form: &[(&str, &str)],
    origin: Option<&str>,
) -> (u16, String) {
    let mut r = browserless()
        .post(app.url(path))
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, FORM)
        .body(crate::hostile::query(form));
    if let Some(o) = origin {
        r = r.header(header::ORIGIN, o);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let location = r
        .headers()
        .get(header::LOCATION)
        .map(|v| v.to_str().unwrap().to_string());
    (status, location.unwrap_or(r.text().await.unwrap()))
}

#[tokio::test]
async fn sign_in_sets_a_strict_http_only_cookie_and_every_response_is_locked_down() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.project, "read").await;
    let (s, h, body) = page(&app, "", "/ui").await;
    assert_eq!(
        (s, h[header::LOCATION].to_str().unwrap()),
        (303, "/ui/signin"),
        "{body}"
    );
    let (s, h, body) = page(&app, "", "/ui/signin").await;
    assert_eq!(s, 200);
    assert!(
        body.contains("<label for=\"key\">"),
        "the key field is labelled: {body}"
    );
    for (name, value) in [
        ("content-security-policy", cairn::ui::headers::CSP),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(h[name], value, "{name}");
    }
    assert!(
        !cairn::ui::headers::CSP.contains("script-src")
            && cairn::ui::headers::CSP.contains("default-src 'none'")
    );

    let (pair, set) = sign_in(&app, &key).await;
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
        assert!(set.contains(flag), "{flag} in {set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: no Secure flag");
    assert!(
        !set.contains(&key) && !set.contains(&key[6..22]),
        "the cookie is not the key"
    );
    let stored = crate::helpers::count(
        "MATCH (s:UiSession {project: $project}) WHERE s.expires_at > timestamp() RETURN count(s) AS n",
        &app.project,
    )
    .await;
    assert_eq!(stored, 1, "the sign-in lives in Neo4j");

    let (s, h, body) = page(&app, &pair, "/ui").await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(h["content-security-policy"], cairn::ui::headers::CSP);
    assert!(body.contains(&app.project));
    assert!(!body.contains("<script"), "no script on a page");

    // Behind a TLS-terminating proxy the cookie is Secure.
    let r = browserless()
        .post(app.url("/ui/signin"))
        .header("x-forwarded-proto", "https")
        .header(header::CONTENT_TYPE, FORM)
        .body(crate::hostile::query(&[("key", key.as_str())]))
        .send()
        .await
        .unwrap();
    assert!(r.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("; Secure"));

    // Unknown pages are HTML 404s with the same headers; the stylesheet is served.
    let (s, h, _) = page(&app, &pair, "/ui/nowhere").await;
    assert_eq!(
        (s, &h["x-frame-options"]),
        (404, &"DENY".parse::<header::HeaderValue>().unwrap())
    );
    let (s, h, css) = page(&app, "", "/ui/assets/cairn.css").await;
    assert_eq!(s, 200);
    assert!(h[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    assert!(css.contains("svg.plot"));
}

#[tokio::test]
async fn wrong_and_revoked_keys_cannot_sign_in_and_revocation_ends_a_sign_in() {
    let app = TestApp::spawn().await;
    let r = browserless()
        .post(app.url("/ui/signin"))
        .header(header::CONTENT_TYPE, FORM)
        .body(crate::hostile::query(&[(
            "key",
            "cairn_0123456789abcdef_nope",
        )]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().get(header::SET_COOKIE).is_none());
    let body = r.text().await.unwrap();
    assert!(
        body.contains("Unknown or revoked API key") && !body.contains("nope"),
        "the key is not echoed: {body}"
    );

    let key = mint_key(&app.project, "read").await;
    let r = browserless()
        .post(app.url("/ui/signin"))
        .header("sec-fetch-site", "cross-site")
        .header(header::CONTENT_TYPE, FORM)
        .body(crate::hostile::query(&[("key", key.as_str())]))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        403,
        "a sign-in posted from another site is refused"
    );
    assert!(r.headers().get(header::SET_COOKIE).is_none());
    let (pair, _) = sign_in(&app, &key).await;
    assert_eq!(page(&app, &pair, "/ui/beliefs").await.0, 200);
    let key_id = &key[6..22];
    assert!(
        cairn::graph::keys::revoke(&crate::helpers::store(), &app.project, key_id, "test")
            .await
            .unwrap()
    );
    let (s, h, _) = page(&app, &pair, "/ui/beliefs").await;
    assert_eq!(
        (s, h[header::LOCATION].to_str().unwrap()),
        (303, "/ui/signin"),
        "revoked at once"
    );
    // A forged cookie is refused the same way.
    let (s, _, _) = page(&app, &format!("cairn_ui={}", "a".repeat(64)), "/ui").await;
    assert_eq!(s, 303);
}

#[tokio::test]
async fn actions_need_the_csrf_token_and_this_origin_and_sign_out_ends_the_sign_in() {
    let app = TestApp::spawn().await;
    let seeded = seed(&app).await;
    let admin = mint_key(&app.project, "admin").await;
    let (pair, _) = sign_in(&app, &admin).await;
    let belief_path = format!("/ui/beliefs/{}", seeded.belief);
    let (s, _, html) = page(&app, &pair, &belief_path).await;
    assert_eq!(s, 200, "{html}");
    let token = csrf(&html);
    let review = format!("{belief_path}/review");

    let (s, _) = post_form(
        &app,
        &pair,
        &review,
        &[("csrf", &"0".repeat(64)), ("decision", "approve")],
        None,
    )
    .await;
    assert_eq!(s, 403, "a wrong token is refused");
    let (s, _) = post_form(&app, &pair, &review, &[("decision", "approve")], None).await;
    assert!((400..500).contains(&s), "a missing token is refused: {s}");
    let (s, _) = post_form(
        &app,
        &pair,
        &review,
        &[("csrf", &token), ("decision", "approve")],
        Some("https://evil.example"),
    )
    .await;
    assert_eq!(s, 403, "another origin is refused");
    let (_, list) = app
        .get(&format!(
            "/v1/beliefs?project={}&status=proposed",
            app.project
        ))
        .await;
    assert_eq!(
        list["beliefs"].as_array().unwrap().len(),
        1,
        "nothing changed"
    );

    let origin = app.addr.clone();
    let (s, location) = post_form(
        &app,
        &pair,
        &review,
        &[("csrf", &token), ("decision", "approve")],
        Some(&origin),
    )
    .await;
    assert_eq!((s, location.as_str()), (303, belief_path.as_str()));
    let (_, list) = app
        .get(&format!(
            "/v1/beliefs?project={}&status=active",
            app.project
        ))
        .await;
    assert_eq!(
        list["beliefs"][0]["id"],
        seeded.belief.as_str(),
        "approved through the same workflow"
    );
    let (s, msg) = post_form(
        &app,
        &pair,
        &review,
        &[("csrf", &token), ("decision", "approve")],
        None,
    )
    .await;
    assert_eq!(s, 303, "approving an active belief changes nothing: {msg}");

    // A read key sees no review buttons and may not review.
    let reader = mint_key(&app.project, "read").await;
    let (rpair, _) = sign_in(&app, &reader).await;
    let (_, _, html) = page(&app, &rpair, &belief_path).await;
    assert!(!html.contains("/review"), "no actions for a read key");
    let (s, _) = post_form(
        &app,
        &rpair,
        &review,
        &[("csrf", &csrf(&html)), ("decision", "reject")],
        None,
    )
    .await;
    assert_eq!(s, 403);

    let (s, _) = post_form(&app, &pair, "/ui/signout", &[("csrf", "x")], None).await;
    assert_eq!(s, 403, "signing out needs the token too");
    let (s, location) = post_form(&app, &pair, "/ui/signout", &[("csrf", &token)], None).await;
    assert_eq!((s, location.as_str()), (303, "/ui/signin"));
    assert_eq!(page(&app, &pair, "/ui").await.0, 303, "the sign-in is gone");
}

#[tokio::test]
async fn a_key_of_another_project_sees_nothing_of_this_one() {
    let app = TestApp::spawn().await;
    let seeded = seed(&app).await;
    let other = format!("{}-other", app.project);
    let (pair, _) = sign_in(&app, &mint_key(&other, "admin").await).await;
    let (s, _, html) = page(&app, &pair, "/ui").await;
    assert_eq!(s, 200);
    assert!(
        html.contains(&other) && !html.contains("Move the cache to Redis"),
        "{html}"
    );
    for path in [
        format!("/ui/sessions/{}", seeded.session),
        format!("/ui/beliefs/{}", seeded.belief),
    ] {
        let (s, _, html) = page(&app, &pair, &path).await;
        assert_eq!(s, 404, "{path}: {html}");
        assert!(!html.contains("Redis"));
    }
    for path in [
        "/ui/decisions?subject=cache%20backend",
        "/ui/file?path=src/cache.rs",
        "/ui/search?q=redis%20cache",
        "/ui/beliefs",
        "/ui/runs",
    ] {
        let (s, _, html) = page(&app, &pair, path).await;
        assert_eq!(s, 200, "{path}");
        assert!(
            !html.contains("Redis") && !html.contains("memcached"),
            "{path} shows nothing of the other project"
        );
    }
    let (s, _) = post_form(
        &app,
        &pair,
        &format!("/ui/beliefs/{}/review", seeded.belief),
        &[
            ("csrf", &csrf(&html_of(&app, &pair).await)),
            ("decision", "reject"),
        ],
        None,
    )
    .await;
    assert_eq!(s, 404, "nor can it review this project's beliefs");
}

async fn html_of(app: &TestApp, cookie: &str) -> String {
    page(app, cookie, "/ui").await.2
}

#[tokio::test]
async fn pages_show_the_project_and_escape_hostile_text() {
    let app = TestApp::spawn().await;
    let seeded = seed(&app).await;
    let (pair, _) = sign_in(&app, &mint_key(&app.project, "read").await).await;
    let expect = |path: &str, html: &str, parts: &[&str]| {
        for part in parts {
            assert!(html.contains(part), "{path} shows {part:?}:\n{html}");
        }
        for m in MARKUP {
            assert!(!html.contains(m), "{path} contains raw markup {m}");
        }
        assert!(
            !html.contains("<script")
                && !html.contains("<img")
                && !html.contains("<iframe")
                && !html.contains("<svg onload")
        );
    };
    let session_path = format!("/ui/sessions/{}", seeded.session);
    let belief_path = format!("/ui/beliefs/{}", seeded.belief);
    let hostile_path = format!("/ui/sessions/{}", seeded.hostile);
    let pages: Vec<(&str, Vec<&str>)> = vec![
        (
            "/ui",
            vec![
                "Move the cache to Redis",
                "Moved the cache to Redis behind a trait",
                "benchmark the Redis cache",
                "cache backend",
                "Redis keeps the cache warm",
                "Explore the cache call sites",
                "src/cache.rs",
                "<svg",
                "hostile summary &lt;script&gt;",
            ],
        ),
        (
            &session_path,
            vec![
                "swap the cache for a Redis client",
                "Rejected",
                "in-process LRU",
                "drop the old LRU",
                "Explore the cache call sites",
                "id=\"op-2\"",
            ],
        ),
        (
            "/ui/decisions?subject=Cache%20Backend",
            vec![
                "Supersedes",
                "Superseded by",
                "memcached",
                "shared across the web workers",
            ],
        ),
        (
            "/ui/beliefs?status=proposed",
            vec!["Redis keeps the cache warm"],
        ),
        (
            &belief_path,
            vec![
                "Conviction over time",
                "<polyline",
                "swap the cache for a Redis client",
                "supports",
            ],
        ),
        (
            "/ui/file?path=src/cache.rs",
            vec![
                "cache backend",
                "over memcached, in-process LRU",
                "Move the cache to Redis",
                "superseded",
            ],
        ),
        ("/ui/runs", vec!["No extraction runs yet"]),
        (
            "/ui/search?q=hostile%20summary",
            vec!["hostile summary &lt;script&gt;", "Turns"],
        ),
        (
            &hostile_path,
            vec![
                "hostile task &lt;script&gt;document.title=",
                "&lt;img src=x onerror=",
            ],
        ),
    ];
    for (path, parts) in &pages {
        let (s, h, html) = page(&app, &pair, path).await;
        assert_eq!(s, 200, "{path}: {html}");
        assert_eq!(h["content-security-policy"], cairn::ui::headers::CSP);
        expect(path, &html, parts);
    }
    // Bad input is a clear 4xx page, not a failure.
    let long = "x".repeat(1001);
    for path in [
        format!("/ui/search?q={long}"),
        "/ui/beliefs?status=maybe".to_string(),
        format!("/ui/file?path={}", "p".repeat(1100)),
    ] {
        let (s, _, html) = page(&app, &pair, &path).await;
        assert_eq!(s, 400, "{path}: {html}");
    }
    let (s, _, _) = page(&app, &pair, "/ui/sessions/not-a-session").await;
    assert_eq!(s, 404);
    let _ = seeded.child;
}

/// Posts `key` to the sign-in form: status, `Retry-After`, whether a cookie was set, body.
async fn try_sign_in(app: &TestApp, key: &str) -> (u16, Option<String>, bool, String) {
    let r = post_sign_in(app, key).await;
    let retry = r
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_string());
    let cookie = r.headers().get(header::SET_COOKIE).is_some();
    (r.status().as_u16(), retry, cookie, r.text().await.unwrap())
}

#[tokio::test]
async fn failed_sign_ins_from_one_address_are_refused_until_the_window_ends() {
    let app = TestApp::builder()
        .with(|s| {
            s.ui_signin_failures = 3;
            s.ui_signin_window_secs = 3;
        })
        .spawn()
        .await;
    let key = mint_key(&app.project, "read").await;
    // A good sign-in does not count.
    assert_eq!(try_sign_in(&app, &key).await.0, 303);
    let wrong = ["cairn_0123456789abcdef_nope", "", "not a key"];
    for w in wrong {
        let (status, retry, cookie, _) = try_sign_in(&app, w).await;
        assert_eq!((status, retry, cookie), (401, None, false), "{w:?}");
    }
    // Three failures used up: even the right key is refused, with the wait.
    for k in [key.as_str(), wrong[0]] {
        let (status, retry, cookie, body) = try_sign_in(&app, k).await;
        assert_eq!(status, 429);
        assert!(!cookie, "no sign-in while refused");
        let wait: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=3).contains(&wait), "{wait}");
        assert!(body.contains("Too many failed sign-ins"), "{body}");
    }
    // The pages themselves are not held back, and the refusal ends with the window.
    tokio::time::sleep(std::time::Duration::from_millis(3_100)).await;
    let (status, _, cookie, _) = try_sign_in(&app, &key).await;
    assert_eq!((status, cookie), (303, true));
}
