//! The embedded models: all-MiniLM-L6-v2's vectors against sentence-transformers' and
//! e5-small-v2's against ONNX Runtime running its export (independent implementations,
//! `scripts/embed-reference.py` and `scripts/embed-reference-e5.py`, stored in
//! `tests/fixtures/embed/`), the calibration pairs read by both and by a remote model in a
//! narrow cone, and keyword-only service when the files are missing. Needs the weights:
//! `make test` runs `scripts/embed-model fetch all` first.

use std::{path::PathBuf, time::Duration};

use cairn::config::{EmbedLocalModel, EmbedSettings, EmbedSwitch};
use cairn::embed::{calibrate, cosine, local, Embedder, Purpose, Status};
use serde_json::{json, Value};

use crate::helpers::{app_with_embeddings, eventually, settle, TestApp};

/// The fetched model's files in the repository.
fn model_dir(model: EmbedLocalModel) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(local::default_dir(local::spec(model)))
}

/// The embedded model, loaded (fails with what to run when the weights are missing).
async fn local_embedder(model: EmbedLocalModel) -> Embedder {
    let settings = EmbedSettings {
        switch: EmbedSwitch::On,
        local_model: model,
        model_dir: Some(model_dir(model)),
        batch: 4,
        ..Default::default()
    };
    let e = Embedder::from_settings(&settings, 384).expect("vectors are on");
    let status = settle(
        120,
        || {
            let e = e.clone();
            async move { e.status() }
        },
        |s| *s != Status::Loading,
    )
    .await;
    assert_eq!(
        status,
        Status::Ready,
        "the model in {} did not load (run `scripts/embed-model fetch all`)",
        model_dir(model).display()
    );
    e
}

/// The cosine of `got` to the reference vector `want` of `case`, asserted ≥ 0.999.
fn close_to_reference(case: &Value, got: &[f32], want: &[f32]) -> f64 {
    let cos = cosine(got, want);
    assert!(
        cos >= 0.999,
        "cosine {cos:.5} for {} {:?} ({} tokens)",
        case["purpose"],
        case["text"],
        case["tokens"]
    );
    cos
}

/// A fixture's texts and vectors.
fn reference(fixture: &str) -> Vec<(Value, Vec<f32>)> {
    let fixture: Value = serde_json::from_str(fixture).expect("fixture");
    fixture["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let v = c["vector"]
                .as_array()
                .expect("vector")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect();
            (c.clone(), v)
        })
        .collect()
}

#[tokio::test]
async fn embed_local_matches_sentence_transformers() {
    let cases = reference(include_str!("../fixtures/embed/minilm-reference.json"));
    assert!(cases.len() >= 8);
    let texts: Vec<String> = cases
        .iter()
        .map(|(c, _)| c["text"].as_str().expect("text").to_string())
        .collect();
    let e = local_embedder(EmbedLocalModel::AllMiniLmL6V2).await;
    assert_eq!(e.model(), "local:all-MiniLM-L6-v2#unlabelled");
    assert_eq!(e.dimensions(), 384);
    // Batches of 4, sorted by length inside the request: the order must come back intact.
    let vectors = e.embed(&texts).await.expect("embedded");
    assert_eq!(vectors.len(), cases.len());
    // The model has no prefixes: a query is embedded as the same text.
    let query = e
        .embed_for(&texts[..1], Purpose::Query)
        .await
        .expect("embedded");
    assert!(cosine(&query[0], &vectors[0]) > 0.99999);
    let mut lowest = f64::MAX;
    for ((case, want), v) in cases.iter().zip(&vectors) {
        assert_eq!(v.len(), 384);
        lowest = lowest.min(close_to_reference(case, v, want));
    }
    eprintln!("lowest cosine to sentence-transformers: {lowest:.6}");
    // The model card's vector for the first sentence.
    let first: Vec<f64> = vectors[0][..3].iter().map(|x| f64::from(*x)).collect();
    for (got, want) in first.iter().zip([0.0677, 0.0635, 0.0487]) {
        assert!((got - want).abs() < 1e-3, "{first:?}");
    }
    // One text alone gives the same vector as within a batch (padding changes nothing).
    let alone = e.embed(&texts[4..5]).await.expect("embedded");
    assert!(cosine(&alone[0], &vectors[4]) > 0.99999);
}

#[tokio::test]
async fn embed_e5_matches_onnx_runtime() {
    let cases = reference(include_str!("../fixtures/embed/e5-reference.json"));
    let e = local_embedder(EmbedLocalModel::E5SmallV2).await;
    assert_eq!(e.model(), "local:e5-small-v2#unlabelled");
    assert_eq!(e.dimensions(), 384);
    let mut lowest = f64::MAX;
    for purpose in [Purpose::Document, Purpose::Query] {
        let name = if purpose == Purpose::Query {
            "query"
        } else {
            "passage"
        };
        let mine: Vec<&(Value, Vec<f32>)> =
            cases.iter().filter(|(c, _)| c["purpose"] == name).collect();
        assert!(mine.len() >= 3, "{name}");
        let texts: Vec<String> = mine
            .iter()
            .map(|(c, _)| c["text"].as_str().expect("text").to_string())
            .collect();
        let vectors = e.embed_for(&texts, purpose).await.expect("embedded");
        for ((case, want), v) in mine.iter().zip(&vectors) {
            lowest = lowest.min(close_to_reference(case, v, want));
        }
    }
    eprintln!("lowest cosine to ONNX Runtime: {lowest:.6}");
    // The prefixes matter: a text as a query is not the text as a passage.
    let text = vec!["speed up recovering data from snapshots".to_string()];
    let q = e.embed_for(&text, Purpose::Query).await.expect("query");
    let p = e.embed(&text).await.expect("passage");
    assert!(cosine(&q[0], &p[0]) < 0.99, "{}", cosine(&q[0], &p[0]));
}

#[tokio::test]
async fn embed_local_finds_meaning_beyond_words() {
    for model in [EmbedLocalModel::E5SmallV2, EmbedLocalModel::AllMiniLmL6V2] {
        finds_meaning_beyond_words(model).await;
    }
}

async fn finds_meaning_beyond_words(model: EmbedLocalModel) {
    let e = local_embedder(model).await;
    let texts: Vec<String> = [
        "speed up recovering data from snapshots",
        "making the nightly backup restore faster",
        "the login page shows the wrong font",
    ]
    .map(String::from)
    .to_vec();
    let q = e.embed_query(&texts[0]).await.expect("query");
    let v = e.embed(&texts[1..]).await.expect("embedded");
    // On the common scale (e5's cosines all lie near 0.7–0.9).
    let scale = e.calibration();
    let related = scale.read(cosine(&q, &v[0]));
    let unrelated = scale.read(cosine(&q, &v[1]));
    assert!(
        related > unrelated + 0.2,
        "{}: related {related:.3} vs unrelated {unrelated:.3}",
        e.model()
    );
}

#[tokio::test]
async fn missing_weights_mean_keyword_only_not_a_crash() {
    let empty = tempfile::tempdir().expect("tempdir");
    let dir = empty.path().to_path_buf();
    let app = TestApp::builder()
        .with(move |s| {
            s.embed.switch = EmbedSwitch::On;
            s.embed.model_dir = Some(dir);
        })
        .spawn()
        .await;
    // Ready all the same; the embeddings field says keyword-only, why, and what to run.
    let ready = app
        .get_when("/readyz", |b| b["embeddings"]["status"] != "loading")
        .await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let emb = &ready["embeddings"];
    assert_eq!(emb["status"], "unavailable", "{emb}");
    assert_eq!(emb["search"], "keyword_only");
    assert_eq!(emb["model"], "local:all-MiniLM-L6-v2#unlabelled");
    let reason = emb["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("model.safetensors is missing"), "{reason}");
    assert!(reason.contains("scripts/embed-model fetch"), "{reason}");

    // Search answers on fulltext and says why.
    let sid = app.session().await;
    app.ops_sync(
        &sid,
        json!([{"type": "message", "role": "user", "content": "restore the nightly backup faster"}]),
    )
    .await;
    let (status, body) = app
        .post(
            "/v1/sessions/search",
            &json!({"project": app.project, "query": "nightly backup"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mode"], "fulltext");
    let degraded = body["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("scripts/embed-model fetch"), "{body}");
    // Still serving after a while (no crash in the background).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, _) = app.get("/healthz").await;
    assert_eq!(code, 200);
    app.stop().await;
}

#[tokio::test]
async fn the_calibration_pairs_read_as_the_embedded_models_do() {
    let minilm = local_embedder(EmbedLocalModel::AllMiniLmL6V2).await;
    let got = calibrate::cosines(&minilm).await.expect("embedded");
    for (p, c) in calibrate::PAIRS.iter().zip(&got) {
        assert!((p.2 - c).abs() < 0.005, "{c:.4} for {p:?}");
    }
    // e5-small-v2's cone, measured on the pairs, is the one its calibration states.
    let e5 = local_embedder(EmbedLocalModel::E5SmallV2).await;
    let measured = calibrate::fit(&calibrate::cosines(&e5).await.expect("embedded"))
        .expect("e5 follows MiniLM");
    let stated = e5.calibration();
    assert!(
        (measured.unrelated - stated.unrelated).abs() < 0.03
            && (measured.span - stated.span).abs() < 0.05,
        "measured {measured:?}, stated {stated:?}"
    );
}

/// Words of the texts [`a_remote_model_in_a_narrow_cone_is_read_on_the_common_scale`] stores
/// and asks: those texts are embedded by the real model, everything else (other tests'
/// backlog, which the global indexer also reaches) by the quick fake.
const CONE_WORDS: [&str; 4] = ["refresh", "changelog", "garden", "violin"];

/// e5-small-v2 behind an OpenAI-compatible endpoint faked at the HTTP boundary: a remote model
/// whose unrelated texts lie near cosine 0.7, as ada-002's do.
async fn e5_endpoint() -> wiremock::MockServer {
    use std::sync::mpsc;
    let e5 = local_embedder(EmbedLocalModel::E5SmallV2).await;
    type Ask = (Vec<String>, mpsc::Sender<Vec<Vec<f32>>>);
    let (asks, inbox) = mpsc::channel::<Ask>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        while let Ok((texts, back)) = inbox.recv() {
            let _ = back.send(
                rt.block_on(e5.embed_for(&texts, Purpose::Query))
                    .expect("e5"),
            );
        }
    });
    let asks = std::sync::Mutex::new(asks);
    let real = |t: &str| {
        let t = t.to_lowercase();
        calibrate::PAIRS
            .iter()
            .any(|p| p.0.eq_ignore_ascii_case(&t) || p.1.eq_ignore_ascii_case(&t))
            || CONE_WORDS.iter().any(|w| t.contains(w))
    };
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/embeddings"))
        .respond_with(move |req: &wiremock::Request| {
            let texts = cairn_testkit::embed::inputs(req);
            let wanted: Vec<String> = texts.iter().filter(|t| real(t)).cloned().collect();
            let (back, answer) = mpsc::channel();
            asks.lock()
                .unwrap()
                .send((wanted, back))
                .expect("e5 thread");
            let mut made = answer.recv().expect("e5 vectors").into_iter();
            let vectors = texts
                .iter()
                .map(|t| {
                    if real(t) {
                        made.next().expect("one per text")
                    } else {
                        cairn_testkit::embed::fake_vector(t)
                    }
                })
                .collect();
            cairn_testkit::embed::answer_with(vectors)
        })
        .mount(&server)
        .await;
    server
}

/// A remote model whose every pair of texts lies above cosine 0.6 is measured on the
/// calibration pairs at start, so a prompt about something never held recalls nothing (read
/// plainly, every stored turn would pass as close in meaning), while a prompt about what was
/// held still recalls it.
#[tokio::test]
async fn a_remote_model_in_a_narrow_cone_is_read_on_the_common_scale() {
    let server = e5_endpoint().await;
    let (app, _turn) = app_with_embeddings(&server).await;
    let ready = app
        .get_when("/readyz", |b| b["embeddings"]["calibration"].is_object())
        .await;
    let scale = &ready["embeddings"]["calibration"];
    let unrelated = scale["unrelated"].as_f64().unwrap();
    assert!((0.6..0.8).contains(&unrelated), "{scale}");
    assert!(scale["span"].as_f64().unwrap() < 0.4, "{scale}");
    assert_eq!(scale["fitted"], true, "{scale}");

    crate::helpers::refresh_tokens_session(&app, 3).await;
    eventually(90, "the turns are embedded", || async {
        let body = json!({"project": app.project, "query": "refresh tokens"});
        let (_, found) = crate::turns::turn_search(&app, body).await;
        found["mode"] == "hybrid" && found["pending_embeddings"] == 0
    })
    .await;
    // Each prompt is searched first: its vector is then remembered, so the hook's answer is
    // not late on a busy machine (a late answer is empty too, and would pass for "nothing").
    let ask = |prompt: &'static str| {
        let session = format!("cc-{}", uuid::Uuid::new_v4());
        let app = &app;
        async move {
            let body = json!({"project": app.project, "query": prompt});
            let (_, found) = crate::turns::turn_search(app, body).await;
            assert_eq!(found["mode"], "hybrid", "{found}");
            crate::helpers::prompt_recall(app, &session, prompt).await
        }
    };
    let recalled = settle(
        60,
        || ask("When do our refresh tokens expire?"),
        Option::is_some,
    )
    .await
    .expect("recalled memory");
    for unrelated in [
        "paint the garden shed purple before the weekend",
        "book a table near the violin school for friday dinner",
    ] {
        let recalled = ask(unrelated).await;
        assert!(recalled.is_none(), "{unrelated}: {recalled:?}");
    }
    assert!(recalled.contains("fourteen days"), "{recalled}");
    assert!(!recalled.contains("changelog"), "{recalled}");
}
