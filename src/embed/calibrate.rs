//! How a remote model's cosines read on the common scale (`Calibration`): the thresholds that
//! read a cosine as such — a prompt's "close in meaning", a search's floor, a near-duplicate —
//! were set on all-MiniLM-L6-v2's, and models differ widely (ada-002 puts unrelated texts near
//! 0.7, MiniLM near 0). The endpoint embeds [`PAIRS`] once; a straight line from MiniLM's
//! cosines of the same pairs (stored here, checked against the embedded model by the tests)
//! to the endpoint's gives where its "unrelated" lies and how much cosine its "the same"
//! spans.

use super::{cosine, Calibration, EmbedError, Embedder, Purpose};

/// Pairs of a question (embedded as a query) and a stored text (as a document), from unrelated
/// through the same topic to the answer itself, with all-MiniLM-L6-v2's cosine of each.
pub const PAIRS: &[(&str, &str, f64)] = &[
    // Unrelated.
    (
        "how do we rotate the signing keys?",
        "Caroline went hiking in the mountains with her dog last weekend.",
        -0.069,
    ),
    (
        "why is the nightly build failing?",
        "The soup needs more salt and a little lemon juice.",
        0.141,
    ),
    (
        "what colour should the landing page button be?",
        "The migration adds an index on the orders table's customer id.",
        0.060,
    ),
    (
        "when did Melanie start painting?",
        "Run cargo clippy with warnings denied before every commit.",
        0.056,
    ),
    (
        "which port does the metrics server listen on?",
        "We adopted a kitten from the shelter in March.",
        -0.063,
    ),
    (
        "how long should refresh tokens live?",
        "The garden shed needs a new coat of paint before winter.",
        0.068,
    ),
    (
        "what did we decide about the retry policy?",
        "She plays the violin in a community orchestra on Thursdays.",
        -0.073,
    ),
    (
        "where are the database backups stored?",
        "The football match ended in a draw after extra time.",
        -0.036,
    ),
    // The same topic, not the answer.
    (
        "how do we rotate the signing keys?",
        "The login page shows an error when the password field is empty.",
        0.141,
    ),
    (
        "why is the nightly build failing?",
        "We moved the release notes into the docs folder.",
        0.163,
    ),
    (
        "what colour should the landing page button be?",
        "The footer links open in a new tab now.",
        0.226,
    ),
    (
        "when did Melanie start painting?",
        "Melanie took her kids to the museum on Sunday.",
        0.536,
    ),
    (
        "which port does the metrics server listen on?",
        "The logs are written as JSON lines with a request id.",
        0.217,
    ),
    (
        "how long should refresh tokens live?",
        "Users sign in with their email address and a password.",
        0.041,
    ),
    (
        "what did we decide about the retry policy?",
        "The HTTP client sends requests through a connection pool.",
        0.074,
    ),
    (
        "where are the database backups stored?",
        "The database schema has a table for invoices and one for customers.",
        0.262,
    ),
    // The answer.
    (
        "how do we rotate the signing keys?",
        "Signing keys are rotated every ninety days by the key rotation job, and the old key stays valid for a week.",
        0.704,
    ),
    (
        "why is the nightly build failing?",
        "The nightly build fails because the integration tests time out waiting for the database to start.",
        0.704,
    ),
    (
        "what colour should the landing page button be?",
        "We chose a green call-to-action button for the landing page because it tested best.",
        0.701,
    ),
    (
        "when did Melanie start painting?",
        "Melanie said she started painting in 2016, after her first child was born.",
        0.849,
    ),
    (
        "which port does the metrics server listen on?",
        "The metrics server listens on port 9464 and serves Prometheus text.",
        0.773,
    ),
    (
        "how long should refresh tokens live?",
        "Refresh tokens expire after fourteen days and rotate on every use.",
        0.748,
    ),
    (
        "what did we decide about the retry policy?",
        "Decision: retry failed requests three times with exponential backoff, honouring Retry-After.",
        0.606,
    ),
    (
        "where are the database backups stored?",
        "Database backups are stored in the S3 bucket cairn-backups, encrypted, kept for thirty days.",
        0.668,
    ),
];

/// The fewest cosine a fit must span from the least to the most related pair: a model that
/// reads them all alike tells nothing.
const MIN_SLOPE: f64 = 0.05;
/// How closely the endpoint's cosines must follow MiniLM's (Pearson's r) to be read by them.
const MIN_CORRELATION: f64 = 0.8;

/// The straight line from MiniLM's cosines of [`PAIRS`] to `theirs` (the same pairs, by
/// another model) as a calibration: through both means, sloped by the ratio of their spreads;
/// `None` when they do not follow MiniLM's closely enough to be read that way.
pub fn fit(theirs: &[f64]) -> Option<Calibration> {
    let ours: Vec<f64> = PAIRS.iter().map(|p| p.2).collect();
    if theirs.len() != ours.len() || ours.len() < 3 {
        return None;
    }
    let n = ours.len() as f64;
    let (mx, my) = (ours.iter().sum::<f64>() / n, theirs.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in ours.iter().zip(theirs) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let r = sxy / (sxx * syy).sqrt();
    // The line read back (`Calibration::read`) takes the endpoint's cosines to MiniLM's, so
    // its slope is the ratio of their spreads (reduced major axis): the least-squares slope,
    // r times that, would read them spread 1/r times wider, more of them past a threshold.
    let slope = (syy / sxx).sqrt();
    (slope >= MIN_SLOPE && r >= MIN_CORRELATION && r.is_finite()).then_some(Calibration {
        unrelated: my - slope * mx,
        span: slope,
    })
}

/// Embeds [`PAIRS`] with `embedder` and returns each pair's cosine.
pub async fn cosines(embedder: &Embedder) -> Result<Vec<f64>, EmbedError> {
    let questions: Vec<String> = PAIRS.iter().map(|p| p.0.to_string()).collect();
    let texts: Vec<String> = PAIRS.iter().map(|p| p.1.to_string()).collect();
    let (q, t) = (
        embedder.embed_for(&questions, Purpose::Query).await?,
        embedder.embed_for(&texts, Purpose::Document).await?,
    );
    Ok(q.iter().zip(&t).map(|(a, b)| cosine(a, b)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> Vec<f64> {
        PAIRS.iter().map(|p| p.2).collect()
    }

    #[test]
    fn a_model_read_as_minilm_is_found_on_its_own_line() {
        let c = fit(&ours()).expect("MiniLM follows itself");
        assert!(
            c.unrelated.abs() < 1e-9 && (c.span - 1.0).abs() < 1e-9,
            "{c:?}"
        );
        // A model in a narrow cone, as ada-002 or e5 put texts: 0.75 + 0.2 × MiniLM's.
        let cone: Vec<f64> = ours().iter().map(|x| 0.75 + 0.2 * x).collect();
        let c = fit(&cone).unwrap();
        assert!((c.unrelated - 0.75).abs() < 1e-9 && (c.span - 0.2).abs() < 1e-9);
        // Its unrelated pair then reads as unrelated, its answer as close.
        assert!(c.read(cone[0]) < 0.05 && c.read(cone[19]) > 0.8, "{c:?}");
    }

    #[test]
    fn a_model_that_does_not_follow_minilm_is_not_read_by_it() {
        assert_eq!(fit(&vec![0.7; PAIRS.len()]), None, "all alike");
        // Cosines ordered against the pairs' relatedness.
        let reversed: Vec<f64> = ours().iter().map(|x| 0.9 - 0.2 * x).collect();
        assert_eq!(fit(&reversed), None);
        // Noise around a cone: the answers are no closer than the strangers.
        let noise: Vec<f64> = (0..PAIRS.len())
            .map(|i| 0.7 + 0.01 * ((i * 7) % 5) as f64)
            .collect();
        assert_eq!(fit(&noise), None);
        assert_eq!(fit(&[0.1, 0.9]), None, "not the pairs' cosines");
    }

    #[test]
    fn the_pairs_span_unrelated_to_the_answer() {
        let (strangers, answers) = (&PAIRS[..8], &PAIRS[16..]);
        assert!(strangers.iter().all(|p| p.2 < 0.2));
        assert!(answers.iter().all(|p| p.2 > 0.55));
    }
}
