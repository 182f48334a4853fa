//! The embedded model: its vectors against sentence-transformers' (an independent
//! implementation, `scripts/embed-reference.py`, stored in
//! `tests/fixtures/embed/minilm-reference.json`), and keyword-only service when its files are
//! missing. Needs the weights: `make test` runs `scripts/embed-model fetch` first.

use std::{path::PathBuf, time::Duration};

use cairn::config::{EmbedSettings, EmbedSwitch};
use cairn::embed::{Embedder, Status};
use serde_json::{json, Value};

use crate::helpers::{settle, TestApp};

/// The fetched model: `CAIRN_EMBED_MODEL_DIR`, else the repository's default.
fn model_dir() -> PathBuf {
    std::env::var_os("CAIRN_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(cairn::embed::local::DEFAULT_DIR)
        })
}

/// The embedded model, loaded (fails with what to run when the weights are missing).
async fn local_embedder() -> Embedder {
    let settings = EmbedSettings {
        switch: EmbedSwitch::On,
        model_dir: Some(model_dir()),
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
        "the model in {} did not load (run `scripts/embed-model fetch`)",
        model_dir().display()
    );
    e
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[tokio::test]
async fn embed_local_matches_sentence_transformers() {
    let fixture: Value =
        serde_json::from_str(include_str!("../fixtures/embed/minilm-reference.json"))
            .expect("fixture");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    let texts: Vec<String> = cases
        .iter()
        .map(|c| c["text"].as_str().expect("text").to_string())
        .collect();
    let e = local_embedder().await;
    assert_eq!(e.model(), "local:all-MiniLM-L6-v2");
    assert_eq!(e.dimensions(), 384);
    // Batches of 4, sorted by length inside the request: the order must come back intact.
    let vectors = e.embed(&texts).await.expect("embedded");
    assert_eq!(vectors.len(), cases.len());
    let mut lowest = f64::MAX;
    for (case, v) in cases.iter().zip(&vectors) {
        let want: Vec<f32> = case["vector"]
            .as_array()
            .expect("vector")
            .iter()
            .map(|x| x.as_f64().expect("number") as f32)
            .collect();
        assert_eq!(v.len(), 384);
        let cos = cosine(v, &want);
        lowest = lowest.min(cos);
        assert!(
            cos >= 0.999,
            "cosine {cos:.5} for {:?} ({} tokens)",
            case["text"],
            case["tokens"]
        );
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
async fn embed_local_finds_meaning_beyond_words() {
    let e = local_embedder().await;
    let texts: Vec<String> = [
        "speed up recovering data from snapshots",
        "making the nightly backup restore faster",
        "the login page shows the wrong font",
    ]
    .map(String::from)
    .to_vec();
    let v = e.embed(&texts).await.expect("embedded");
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related:.3} vs unrelated {unrelated:.3}"
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
    assert_eq!(emb["model"], "local:all-MiniLM-L6-v2");
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
