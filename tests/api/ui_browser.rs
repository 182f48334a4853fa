//! The web UI in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver, installed by `make test` like Neo4j is started). Signs in with the keyboard,
//! opens every page, approves a belief and sees it active, finds a session by search, and
//! checks that hostile stored markup shows as text and never runs. Each page's screenshot
//! goes to `target/ui-screenshots/`. Without Chromium these tests fail; they never skip.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{key::Key, Client, ClientBuilder, Locator};
use serde_json::json;

use crate::helpers::{mint_key, settle, TestApp};
use crate::ui::{seed, MARKUP};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver on a free port, and a headless Chromium session through it.
struct Browser {
    client: Client,
    _driver: tokio::process::Child,
}

impl Browser {
    async fn start() -> Self {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(bin).exists(),
                "{bin} is missing: `make test` installs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = tokio::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let caps = json!({
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,1000", "--force-device-scale-factor=1"]
            }
        });
        let caps = caps.as_object().unwrap().clone();
        let url = format!("http://127.0.0.1:{port}");
        let mut last = None;
        for _ in 0..100 {
            match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => {
                    return Self {
                        client,
                        _driver: driver,
                    }
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no WebDriver session from chromedriver: {last:?}");
    }

    async fn open(&self, app: &TestApp, path: &str) {
        self.client.goto(&app.url(path)).await.expect("page loads");
    }

    /// Waits until the browser is at `path` (after a form or a link).
    async fn wait_for(&self, path: &str) {
        let at = settle(
            10,
            || async { self.client.current_url().await.unwrap().path().to_string() },
            |p| p == path,
        )
        .await;
        assert_eq!(at, path);
    }

    /// True when an element matches `css`.
    async fn has(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    /// Clicks the element matching `css`.
    async fn click(&self, css: &str) {
        self.on_element(
            Locator::Css(css),
            |e| async move { e.click().await.map(drop) },
        )
        .await
    }

    /// Clicks the link or button `by` finds and waits until the browser has left this page.
    async fn follow(&self, by: Locator<'_>) {
        let before = self.client.current_url().await.unwrap();
        self.on_element(by, |e| async move { e.click().await.map(drop) })
            .await;
        let now = settle(
            10,
            || async { self.client.current_url().await.unwrap() },
            |now| *now != before,
        )
        .await;
        assert_ne!(now, before, "{by:?} leads to another page");
    }

    async fn text(&self, css: &str) -> String {
        self.on_element(Locator::Css(css), |e| async move { e.text().await })
            .await
    }

    /// Finds the element `by` finds and acts on it. A page that is being replaced (after a
    /// form posts and redirects) can hold no such element for a moment, or turn the element
    /// found stale before the act reaches it; either way the element is looked for again on
    /// the page that replaces it, for up to 10 s.
    async fn on_element<T, F, Fut>(&self, by: Locator<'_>, act: F) -> T
    where
        F: Fn(fantoccini::elements::Element) -> Fut,
        Fut: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
    {
        for _ in 0..50 {
            let element = self
                .client
                .wait()
                .at_most(Duration::from_secs(10))
                .for_element(by)
                .await
                .unwrap_or_else(|e| panic!("{by:?} on the page: {e}"));
            match act(element).await {
                Err(e) if e.is_stale_element_reference() => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                done => return done.unwrap_or_else(|e| panic!("{by:?}: {e}")),
            }
        }
        panic!("{by:?} kept going stale for 5 s: the page never settled");
    }

    async fn body(&self) -> String {
        self.text("body").await
    }

    async fn title(&self) -> String {
        self.client.title().await.unwrap()
    }

    /// Saves the page as `target/ui-screenshots/<name>.png`.
    async fn shot(&self, name: &str) {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ui-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.screenshot().await.expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    async fn close(self) {
        self.client.close().await.expect("browser closes");
    }
}

/// Starts an extraction run (mining only: no LLM configured) and waits for it to end.
async fn extraction_run(app: &TestApp) {
    let (s, b) = app
        .post("/v1/extraction/runs", &json!({"project": app.project}))
        .await;
    assert_eq!(s, 202, "{b}");
    let id = b["run_id"].as_str().unwrap().to_string();
    settle(
        90,
        || async { app.get(&format!("/v1/extraction/runs/{id}")).await.1 },
        |run| run["status"] != "running",
    )
    .await;
}

#[tokio::test]
async fn a_browser_signs_in_opens_every_page_approves_a_belief_and_finds_a_session() {
    let app = TestApp::spawn().await;
    let seeded = seed(&app).await;
    extraction_run(&app).await;
    let key = mint_key(&app.project, "admin").await;
    let b = Browser::start().await;

    // Signing in with the keyboard alone: the key field has focus, Enter submits.
    b.open(&app, "/ui").await;
    assert!(b
        .client
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/ui/signin"));
    b.shot("signin").await;
    let focused = b.client.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("key"),
        "the key field has focus"
    );
    focused
        .send_keys(&format!("{key}{}", char::from(Key::Enter)))
        .await
        .unwrap();
    b.wait_for("/ui").await;
    let text = b.body().await;
    for part in [
        "Recent sessions",
        "Move the cache to Redis",
        "Open todos",
        "benchmark the Redis cache",
        "Decisions in force",
        "Beliefs waiting for approval",
        "Redis keeps the cache warm",
    ] {
        assert!(
            text.contains(part),
            "the project page shows {part:?}:\n{text}"
        );
    }
    assert!(b.has("svg.plot rect.bar").await, "an activity bar is drawn");
    b.shot("project").await;
    // The skip link is the first stop of the keyboard.
    b.client
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .send_keys(&char::from(Key::Tab).to_string())
        .await
        .unwrap();
    let first = b.client.active_element().await.unwrap();
    assert_eq!(first.text().await.unwrap(), "Skip to content");

    // The session, reached by its link on the timeline.
    b.follow(Locator::Css(&format!(
        "ol.timeline a[href='/ui/sessions/{}']",
        seeded.session
    )))
    .await;
    assert_eq!(b.text("h1").await, "Move the cache to Redis");
    let text = b.body().await;
    for part in [
        "swap the cache for a Redis client",
        "Rejected: memcached, in-process LRU",
        "drop the old LRU",
        "Explore the cache call sites",
        "What happened",
    ] {
        assert!(
            text.contains(part),
            "the session page shows {part:?}:\n{text}"
        );
    }
    b.shot("session").await;

    // A subject's history, from a decision's subject link.
    b.follow(Locator::Css("article.decision h3 a")).await;
    assert!(b.text("h1").await.contains("cache backend"));
    assert_eq!(
        b.client
            .find_all(Locator::Css("ol.decisions > li"))
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(b.body().await.contains("Superseded by"));
    b.shot("decisions").await;

    // The file page, from a file link.
    b.open(&app, "/ui/file?path=src/cache.rs").await;
    let text = b.body().await;
    assert!(
        text.contains("cache backend") && text.contains("Move the cache to Redis"),
        "{text}"
    );
    b.shot("file").await;

    // Approve the proposed belief and see it active.
    b.open(&app, "/ui/beliefs?status=proposed").await;
    b.shot("beliefs").await;
    b.follow(Locator::LinkText(
        "Redis keeps the cache warm across deploys",
    ))
    .await;
    assert!(
        b.has("svg.plot polyline").await,
        "the conviction plot is drawn"
    );
    assert!(
        b.has("svg.plot circle.mark.supports").await,
        "its evidence is marked"
    );
    b.shot("belief").await;
    assert!(b.text("dl.meta").await.contains("proposed"));
    b.click("button.approve").await;
    settle(
        10,
        || async { b.text("dl.meta").await },
        |t| t.contains("active"),
    )
    .await;
    assert!(
        b.text("dl.meta").await.contains("active"),
        "approved and shown active at once"
    );
    assert!(!b.has("button.approve").await, "nothing left to approve");
    let (_, list) = app
        .get(&format!(
            "/v1/beliefs?project={}&status=active",
            app.project
        ))
        .await;
    assert_eq!(list["beliefs"][0]["id"], seeded.belief.as_str());

    // Extraction runs.
    b.follow(Locator::LinkText("Extraction runs")).await;
    assert!(b.body().await.contains("mining_only"), "the run is listed");
    b.shot("runs").await;

    // Search from the header box finds the session; its link opens it.
    let q = b.client.find(Locator::Css("#q")).await.unwrap();
    q.send_keys(&format!("Redis cache{}", char::from(Key::Enter)))
        .await
        .unwrap();
    b.wait_for("/ui/search").await;
    let text = b.body().await;
    assert!(
        text.contains("Move the cache to Redis"),
        "the session is found:\n{text}"
    );
    assert!(
        b.has("#found-turns ~ ol.results p.snippet").await,
        "turns with snippets"
    );
    b.shot("search").await;
    b.follow(Locator::Css(&format!(
        "ol.results a[href='/ui/sessions/{}']",
        seeded.session
    )))
    .await;
    assert_eq!(b.text("h1").await, "Move the cache to Redis");

    // Signing out ends it.
    b.click("form.signout button").await;
    b.wait_for("/ui/signin").await;
    b.open(&app, "/ui").await;
    assert!(
        b.client
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/ui/signin"),
        "signed out"
    );
    b.close().await;
}

#[tokio::test]
async fn hostile_stored_markup_shows_as_text_and_never_runs() {
    let app = TestApp::spawn().await;
    let seeded = seed(&app).await;
    let key = mint_key(&app.project, "read").await;
    let b = Browser::start().await;
    b.open(&app, "/ui/signin").await;
    b.client
        .find(Locator::Css("#key"))
        .await
        .unwrap()
        .send_keys(&key)
        .await
        .unwrap();
    b.click("form.signin button").await;
    b.wait_for("/ui").await;
    for path in [
        "/ui".to_string(),
        format!("/ui/sessions/{}", seeded.hostile),
        "/ui/search?q=hostile%20summary".to_string(),
    ] {
        b.open(&app, &path).await;
        let title = b.title().await;
        // The payloads would set the title to exactly `pwned`; the page's own title (which
        // may quote them as text) stays.
        assert!(
            title != "pwned" && title.ends_with("· cairn"),
            "{path}: the title is untouched: {title}"
        );
        let text = b.body().await;
        assert!(
            text.contains(MARKUP[0]) && text.contains(MARKUP[1]),
            "{path} shows the markup as text:\n{text}"
        );
        for tag in ["main script", "main img", "main iframe", "main svg[onload]"] {
            assert!(!b.has(tag).await, "{path}: no {tag} element was made");
        }
        let ran = b
            .client
            .execute("return document.title", vec![])
            .await
            .unwrap();
        assert_ne!(ran, json!("pwned"));
    }
    b.open(&app, &format!("/ui/sessions/{}", seeded.hostile))
        .await;
    b.shot("hostile").await;
    b.close().await;
}
