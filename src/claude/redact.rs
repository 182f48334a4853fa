//! Secrets never reach storage: every string of a hook event or transcript line passes through
//! [`text`] (or [`value`]) before it is mapped to operations. `<private>…</private>` spans are
//! dropped whole; env assignments of secret-looking names, bearer tokens, private key blocks
//! and the common API key shapes are replaced by `[REDACTED]`.

use std::sync::LazyLock;

use regex::Regex;

pub const MARK: &str = "[REDACTED]";

/// `<private>` up to its closing tag, or to the end when it is never closed.
static PRIVATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)<private>.*?(?:</private>|\z)").expect("private regex"));

static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)")
        .expect("private key regex")
});

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}").expect("bearer regex")
});

/// `NAME=value` / `NAME: value` / `"name": "value"` where the name says it holds a secret.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(["']?\b[A-Z0-9_.-]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY|CREDENTIALS?)[A-Z0-9_]*["']?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;&|]+)"#,
    )
    .expect("assignment regex")
});

/// Well-known key shapes, whatever surrounds them.
static KEY_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:",
        r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
        r"|AKIA[0-9A-Z]{16}",
        r"|ASIA[0-9A-Z]{16}",
        r"|gh[pousr]_[A-Za-z0-9]{30,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|glpat-[A-Za-z0-9_-]{20,}",
        r"|xox[abposr]-[A-Za-z0-9-]{10,}",
        r"|AIza[0-9A-Za-z_-]{35}",
        r"|sk_live_[0-9A-Za-z]{20,}",
        r"|rk_live_[0-9A-Za-z]{20,}",
        r"|npm_[A-Za-z0-9]{36}",
        r"|cairn_[0-9a-f]{16}_[0-9a-f]{64}",
        r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        r")"
    ))
    .expect("key shapes regex")
});

/// Passes after which a string that still changes is replaced whole (fail closed).
const MAX_PASSES: usize = 32;

/// `text` with private spans dropped and secrets replaced. Dropping a span can join the two
/// halves of another (`<priv<private>…</private>ate>…`), so passes repeat until one changes
/// nothing.
pub fn text(input: &str) -> String {
    let mut out = input.to_string();
    for _ in 0..MAX_PASSES {
        let next = pass(&out);
        if next == out {
            return out;
        }
        out = next;
    }
    MARK.to_string()
}

fn pass(input: &str) -> String {
    let mut out = PRIVATE.replace_all(input, "").into_owned();
    if out.contains("PRIVATE KEY") {
        out = PRIVATE_KEY
            .replace_all(&out, "[REDACTED PRIVATE KEY]")
            .into_owned();
    }
    out = BEARER
        .replace_all(&out, |c: &regex::Captures| {
            format!("{}{}{MARK}", &c[1], &c[2])
        })
        .into_owned();
    out = ASSIGNMENT
        .replace_all(&out, |c: &regex::Captures| {
            if c[2].contains(MARK) {
                c[0].to_string()
            } else {
                format!("{}{MARK}", &c[1])
            }
        })
        .into_owned();
    KEY_SHAPES.replace_all(&out, MARK).into_owned()
}

/// Redacts every string inside `v`, in place; the value of a key whose name says it holds a
/// secret is replaced whole, whatever it is (a number, an object), unless null or a boolean.
pub fn value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let r = text(s);
            if r != *s {
                *s = r;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(value),
        serde_json::Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let opaque = matches!(child, serde_json::Value::Null | serde_json::Value::Bool(_));
                if !opaque && secret_name(k) {
                    *child = serde_json::Value::String(MARK.into());
                } else {
                    value(child);
                }
            }
        }
        _ => {}
    }
}

/// Object keys whose value is a secret whatever it looks like (`{"api_key": "…"}`, env maps).
fn secret_name(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "secret",
        "token",
        "password",
        "passwd",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "private_key",
        "credential",
        "authorization",
    ]
    .iter()
    .any(|s| k.contains(s))
        && !k.ends_with("_count")
        && !k.ends_with("tokens")
}

/// What is kept of `s`: at most `max` characters, redacted again, because pieces
/// that were clean apart can form a secret together (`MY_TOKEN` and `= …` joined by a
/// newline).
pub fn bounded(s: &str, max: usize) -> String {
    clip(&text(&clip(s, max)), max)
}

/// At most `max` characters of `s`, cut on a char boundary with `…` when shortened.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_assignments_of_secret_names_are_redacted() {
        let r = text("OPENAI_API_KEY=abc123 DB_PASSWORD='p w' RUST_LOG=debug cargo run");
        assert!(!r.contains("abc123"), "{r}");
        assert!(!r.contains("p w"), "{r}");
        assert!(r.contains("RUST_LOG=debug"), "{r}");
        assert!(r.contains("OPENAI_API_KEY=[REDACTED]"), "{r}");
        let r = text("export GITHUB_TOKEN=\"ghs_x\" && gh pr list");
        assert!(!r.contains("ghs_x"), "{r}");
        assert!(r.contains("gh pr list"), "{r}");
    }

    #[test]
    fn bearer_tokens_and_key_shapes_are_redacted() {
        let r = text("curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://x");
        assert!(!r.contains("abcdefghijklmnop1234"), "{r}");
        for secret in [
            "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "AKIAABCDEFGHIJKLMNOP",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-1234567890-abcdefghij",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ] {
            let r = text(&format!("the key is {secret} ok"));
            assert_eq!(r, format!("the key is {MARK} ok"), "{secret}");
        }
    }

    #[test]
    fn private_key_blocks_and_private_tags_are_removed() {
        let pem = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter";
        let r = text(pem);
        assert!(!r.contains("b3BlbnNzaC1rZXktdjEAAAA"), "{r}");
        assert!(r.contains("before") && r.contains("after"));
        let r = text("keep <private>my diary\nline 2</private> this <PRIVATE>and never closed");
        assert_eq!(r, "keep  this ");
    }

    #[test]
    fn a_second_pass_finds_nothing() {
        for s in [
            "<priv<private>x</private>ate>hidden</private> ok",
            "<private>a</private><private>b",
            "-----BEGIN RSA PRIV<private>x</private>ATE KEY-----\nhidden\n-----END RSA PRIVATE KEY-----",
            "Bear<private>x</private>er abcdefghijklmnop",
            "API_<private>x</private>KEY=hidden",
        ] {
            let once = text(s);
            assert_eq!(text(&once), once, "{s:?}");
            assert!(!once.contains("hidden") && !once.contains("abcdefghijklmnop"), "{once:?}");
        }
    }

    #[test]
    fn secret_named_keys_hide_whatever_they_hold() {
        let mut v = serde_json::json!({"password": 12345678, "token": {"value": "abcdef"},
                                       "credentials": ["u", "pw-xyz"], "input_tokens": 5});
        value(&mut v);
        let s = v.to_string();
        assert!(
            !s.contains("12345678") && !s.contains("abcdef") && !s.contains("pw-xyz"),
            "{s}"
        );
        assert_eq!(v["input_tokens"], 5);
    }

    #[test]
    fn values_are_redacted_recursively_and_by_key_name() {
        let mut v = serde_json::json!({
            "command": "TOKEN=abc123xyz make deploy",
            "env": {"API_KEY": "plain", "HOME": "/root"},
            "input_tokens": 5,
            "nested": ["Bearer abcdefghijklmnopq"]
        });
        value(&mut v);
        let s = v.to_string();
        assert!(
            !s.contains("abc123xyz") && !s.contains("plain") && !s.contains("abcdefghijklmnopq"),
            "{s}"
        );
        assert!(s.contains("/root") && s.contains("make deploy"), "{s}");
    }
}
