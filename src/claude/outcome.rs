//! What a tool call answered, as capture keeps it (an operation's `context.response`, which
//! turn search finds it by and a context shows after its line): a bounded, one-paragraph
//! digest of the tool's structured result, read per tool from the shapes Claude Code gives
//! (`sdk-tools.d.ts` of the Agent SDK: `BashOutput`, `AgentOutput`, `WebFetchOutput`,
//! `WebSearchOutput`, `GrepOutput`, …) — [`summarise`] — and what a call that did not run as
//! asked says: its error without Claude Code's `<tool_use_error>` markers, or, for a call the
//! user turned down, what the user said instead ([`failure`]). Nothing is said for a result
//! that says nothing (a command with no output, a subagent that reported nothing), rather
//! than its JSON. Pure.

use serde_json::Value;

use super::redact::{bounded, clip};

/// At most this much of a tool response is kept.
pub const RESPONSE_CHARS: usize = 1_000;

/// How Claude Code opens the result of a call the user turned down ("… proceed with this tool
/// use. …", "… take this action right now. …").
const TURNED_DOWN: &str = "The user doesn't want to";
/// What precedes the user's own words in such a result, when they gave some.
const USER_SAID: &str = "the user said:";
/// The markers Claude Code wraps a tool's own error in.
const ERROR_MARKERS: [&str; 2] = ["<tool_use_error>", "</tool_use_error>"];

/// A call that did not run as asked.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    /// The call's summary: `<tool> failed: <the error's first line>`, or `<tool> turned down
    /// by the user` (with the first line of what they said).
    pub summary: String,
    /// What is kept as its outcome: the error's text, or what the user said.
    pub outcome: Option<String>,
}

/// The failure of a call of tool `name` that answered `error`.
pub fn failure(name: &str, error: &str) -> Failure {
    let error = unmarked(error);
    let error = error.trim();
    if error.starts_with(TURNED_DOWN) {
        let said = error
            .find(USER_SAID)
            .map(|i| error[i + USER_SAID.len()..].trim())
            .filter(|s| !s.is_empty());
        return Failure {
            summary: match said {
                Some(s) => format!("{name} turned down by the user: {}", first_line(s)),
                None => format!("{name} turned down by the user"),
            },
            outcome: said.map(|s| bounded(s, RESPONSE_CHARS)),
        };
    }
    Failure {
        summary: format!("{name} failed: {}", first_line(error)),
        outcome: (!error.is_empty()).then(|| bounded(error, RESPONSE_CHARS)),
    }
}

/// A bounded digest of what tool `tool` answered, or `None` when it says nothing.
pub fn summarise(tool: &str, response: &Value) -> Option<String> {
    let text = match (tool, response) {
        (_, Value::Null) => return None,
        (_, Value::String(s)) => in_words(&unmarked(s)),
        ("Read", r) => lines_read(r),
        ("Bash" | "PowerShell", r) => shell(r)?,
        ("Agent" | "Task", r) => agent(r)?,
        ("Write" | "Edit" | "MultiEdit" | "NotebookEdit", r) => {
            match r.get("type").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => "ok".to_string(),
            }
        }
        ("Grep" | "Glob", r) => found(r),
        ("WebFetch", r) => fetched(r),
        ("WebSearch", r) => searched(r),
        ("TodoWrite" | "TaskCreate" | "TaskUpdate" | "AskUserQuestion", _) => return None,
        ("ExitPlanMode", r) => r.get("filePath").and_then(Value::as_str).map_or_else(
            || "plan presented".to_string(),
            |f| format!("plan saved to {f}"),
        ),
        (_, r) => flatten_blocks(r).unwrap_or_else(|| compact(r)),
    };
    let text = text.trim();
    (!text.is_empty()).then(|| bounded(text, RESPONSE_CHARS))
}

/// The text of content blocks (`[{type: "text", text}]`, or `{content: [...]}` as an MCP
/// CallToolResult or a subagent's report carries them); other block kinds are named, not
/// kept.
fn flatten_blocks(v: &Value) -> Option<String> {
    let blocks = v
        .as_array()
        .or_else(|| v.get("content").and_then(Value::as_array))
        .filter(|b| !b.is_empty() && b.iter().all(is_block))?;
    let parts: Vec<String> = blocks
        .iter()
        .map(
            |b| match (b.get("text").and_then(Value::as_str), field(b, "type")) {
                (Some(t), _) => in_words(t.trim()),
                (None, Some("image")) => "[image]".to_string(),
                (None, _) => compact(b),
            },
        )
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// A content block: an object naming its `type`.
fn is_block(v: &Value) -> bool {
    v.get("type").is_some_and(Value::is_string)
}

/// A non-blank string field of `v`, trimmed.
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A file read (`FileReadOutput`): how many lines of how many, or what kind of file it was —
/// an image's or a PDF's bytes are never kept.
fn lines_read(r: &Value) -> String {
    let file = r.get("file").unwrap_or(r);
    let number = |v: &Value, key: &str| v.get(key).and_then(Value::as_i64);
    match r.get("type").and_then(Value::as_str) {
        Some("image") => format!(
            "{}{}",
            field(file, "type").unwrap_or("image"),
            number(file, "originalSize").map_or_else(String::new, |n| format!(", {n} bytes"))
        ),
        Some("pdf") => format!(
            "PDF{}",
            number(file, "originalSize").map_or_else(String::new, |n| format!(", {n} bytes"))
        ),
        Some("parts") => format!("{} pages", number(file, "count").unwrap_or(0)),
        Some("notebook") => format!(
            "{} cells",
            file.get("cells")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        ),
        _ => match number(file, "numLines") {
            Some(n) => format!(
                "{n} lines{}",
                number(file, "totalLines")
                    .map(|t| format!(" of {t}"))
                    .unwrap_or_default()
            ),
            None => compact(r),
        },
    }
}

/// A shell command's result (`BashOutput`; PowerShell's has the same shape): whether it was
/// interrupted or left running, what its exit code means, its output and its errors. `None`
/// for a command that printed nothing.
fn shell(r: &Value) -> Option<String> {
    if r.get("stdout").is_none() && r.get("stderr").is_none() {
        return Some(compact(r));
    }
    let mut parts = Vec::new();
    if r.get("interrupted").and_then(Value::as_bool) == Some(true) {
        parts.push("(interrupted)".to_string());
    }
    if let Some(id) = field(r, "backgroundTaskId") {
        parts.push(format!("(running in the background as {id})"));
    }
    if let Some(meaning) = field(r, "returnCodeInterpretation") {
        parts.push(meaning.to_string());
    }
    if let Some(out) = field(r, "stdout") {
        if r.get("isImage").and_then(Value::as_bool) == Some(true) {
            parts.push("stdout: [image]".to_string());
        } else {
            parts.push(format!("stdout: {}", clip(out, RESPONSE_CHARS / 2)));
        }
    }
    if let Some(err) = field(r, "stderr") {
        parts.push(format!("stderr: {}", clip(err, RESPONSE_CHARS / 2)));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// A subagent's result (`AgentOutput`): its report, or that it was launched to run in the
/// background or remotely. `None` for a finished subagent that reported nothing.
fn agent(r: &Value) -> Option<String> {
    if let Some(report) = flatten_blocks(r) {
        return Some(report);
    }
    let what = field(r, "description");
    match r.get("status").and_then(Value::as_str) {
        Some("async_launched") => Some(format!(
            "launched in the background: {}",
            what.unwrap_or("a subagent")
        )),
        Some("remote_launched") => Some(format!(
            "launched remotely: {}{}",
            what.unwrap_or("a subagent"),
            field(r, "sessionUrl").map_or_else(String::new, |u| format!(" ({u})"))
        )),
        Some("completed") => None,
        _ => Some(compact(r)),
    }
}

/// A search's result (`GrepOutput`, `GlobOutput`): the matching lines when it asked for
/// them, else how many files matched and which.
fn found(r: &Value) -> String {
    if let Some(lines) = field(r, "content") {
        return lines.to_string();
    }
    let names: Vec<&str> = r
        .get("filenames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let count = r
        .get("numFiles")
        .and_then(Value::as_i64)
        .or_else(|| (!names.is_empty()).then_some(names.len() as i64));
    let of = match r.get("totalMatches").and_then(Value::as_i64) {
        Some(all) if r.get("truncated").and_then(Value::as_bool) == Some(true) => {
            format!(" of {all}")
        }
        _ => String::new(),
    };
    match count {
        Some(n) if names.is_empty() => format!("{n}{of} files"),
        Some(n) => format!("{n}{of} files: {}", names.join(", ")),
        None => compact(r),
    }
}

/// A fetched page (`WebFetchOutput`): what was read from it, after its status when that was
/// not 200.
fn fetched(r: &Value) -> String {
    let Some(result) = field(r, "result") else {
        return compact(r);
    };
    match r.get("code").and_then(Value::as_i64) {
        Some(code) if code != 200 => format!(
            "{code}{}: {result}",
            field(r, "codeText").map_or_else(String::new, |t| format!(" {t}"))
        ),
        _ => result.to_string(),
    }
}

/// A web search's result (`WebSearchOutput`): the titles of the pages found, and any text
/// the search answered with.
fn searched(r: &Value) -> String {
    let Some(results) = r.get("results").and_then(Value::as_array) else {
        return compact(r);
    };
    let mut said: Vec<&str> = Vec::new();
    for item in results {
        match item {
            Value::String(s) if !s.trim().is_empty() => said.push(s.trim()),
            Value::Object(_) => match item.get("content").and_then(Value::as_array) {
                Some(pages) => said.extend(pages.iter().filter_map(|p| field(p, "title"))),
                None => said.extend(field(item, "title")),
            },
            _ => {}
        }
    }
    if said.is_empty() {
        compact(r)
    } else {
        said.join("; ")
    }
}

/// A result of a shape not read above (an MCP tool's object, a tool newer than this mapping)
/// as words rather than JSON: its fields as `key: value`, nested ones within, `; ` between,
/// what is empty, null or false left out; at most [`RESPONSE_CHARS`].
fn compact(v: &Value) -> String {
    let mut out = String::new();
    words_of(v, &mut out);
    clip(&out, RESPONSE_CHARS)
}

/// Appends `v` in words to `out`, stopping once `out` holds more than [`RESPONSE_CHARS`]
/// bytes (so at least as many characters): the rest would be cut anyway.
fn words_of(v: &Value, out: &mut String) {
    let full = |out: &String| out.len() > RESPONSE_CHARS;
    let sep = |out: &mut String| {
        if !out.is_empty() && !out.ends_with(": ") {
            out.push_str("; ");
        }
    };
    if full(out) {
        return;
    }
    match v {
        Value::Null | Value::Bool(false) => {}
        Value::String(s) if s.trim().is_empty() => {}
        Value::String(s) => {
            sep(out);
            out.push_str(s.trim());
        }
        Value::Bool(true) | Value::Number(_) => {
            sep(out);
            out.push_str(&v.to_string());
        }
        Value::Array(items) => {
            for item in items {
                if full(out) {
                    return;
                }
                words_of(item, out);
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields {
                if full(out) {
                    return;
                }
                // Encoded bytes (an image's, a PDF's) say nothing in words.
                if says_nothing(v) || k == "base64" {
                    continue;
                }
                sep(out);
                out.push_str(k);
                out.push_str(": ");
                words_of(v, out);
            }
        }
    }
}

fn says_nothing(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.iter().all(says_nothing),
        Value::Object(o) => o.values().all(says_nothing),
        _ => false,
    }
}

/// A text that is a JSON object or array (what many MCP tools answer in a text block) in words
/// ([`compact`]); any other text as it is.
fn in_words(text: &str) -> String {
    let t = text.trim();
    if t.starts_with(['{', '[']) {
        if let Ok(v @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(t) {
            return compact(&v);
        }
    }
    text.to_string()
}

/// `s` without Claude Code's `<tool_use_error>` markers.
fn unmarked(s: &str) -> String {
    ERROR_MARKERS
        .iter()
        .fold(s.to_string(), |s, marker| s.replace(marker, ""))
}

/// The first line of `s` that is not blank, trimmed.
pub(super) fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_command_that_printed_nothing_says_nothing_and_powershell_reads_like_bash() {
        let quiet = json!({"interrupted": false, "isImage": false, "stderr": "", "stdout": ""});
        assert_eq!(summarise("Bash", &quiet), None);
        assert_eq!(summarise("PowerShell", &quiet), None);
        let said = json!({"interrupted": false, "isImage": false, "stderr": "",
                          "stdout": "OK - no syntax errors"});
        assert_eq!(
            summarise("PowerShell", &said).as_deref(),
            Some("stdout: OK - no syntax errors")
        );
        let grep = json!({"stdout": "", "stderr": "", "interrupted": false,
                          "returnCodeInterpretation": "No matches found"});
        assert_eq!(
            summarise("Bash", &grep).as_deref(),
            Some("No matches found")
        );
        let stopped = json!({"stdout": "", "stderr": "", "interrupted": true});
        assert_eq!(
            summarise("Bash", &stopped).as_deref(),
            Some("(interrupted)")
        );
        let left = json!({"stdout": "", "stderr": "", "interrupted": false,
                          "backgroundTaskId": "bash_7"});
        assert_eq!(
            summarise("Bash", &left).as_deref(),
            Some("(running in the background as bash_7)")
        );
        // A shape that is no shell result is kept in words.
        assert_eq!(
            summarise("Bash", &json!({"ok": true})).as_deref(),
            Some("ok: true")
        );
    }

    #[test]
    fn a_subagent_answers_with_its_report_or_what_it_was_launched_for() {
        let done = json!({"agentId": "a1", "status": "completed", "prompt": "find the writes",
            "content": [{"type": "text", "text": "The index is written in two places:\n- a\n- b"}],
            "totalToolUseCount": 4, "totalDurationMs": 9, "totalTokens": 100, "usage": {}});
        assert_eq!(
            summarise("Agent", &done).as_deref(),
            Some("The index is written in two places:\n- a\n- b")
        );
        assert_eq!(
            summarise("Task", &done),
            summarise("Agent", &done),
            "Task is the tool's older name"
        );
        let quiet = json!({"agentId": "a1", "status": "completed", "content": []});
        assert_eq!(summarise("Agent", &quiet), None);
        let remote = json!({"status": "remote_launched", "taskId": "t9", "description": "Port the parser",
                            "sessionUrl": "https://example.com/s/9", "prompt": "…", "outputFile": "/tmp/t9"});
        assert_eq!(
            summarise("Agent", &remote).as_deref(),
            Some("launched remotely: Port the parser (https://example.com/s/9)")
        );
        // A status newer than this mapping: its fields in words.
        let newer = json!({"status": "queued", "agentId": "a3"});
        assert_eq!(
            summarise("Agent", &newer).as_deref(),
            Some("agentId: a3; status: queued")
        );
        let away = json!({"status": "async_launched", "agentId": "a2", "description": "Scan the logs",
                          "prompt": "…", "outputFile": "/tmp/a2"});
        assert_eq!(
            summarise("Agent", &away).as_deref(),
            Some("launched in the background: Scan the logs")
        );
    }

    #[test]
    fn searches_and_pages_answer_with_what_they_found() {
        let grep = json!({"mode": "content", "numFiles": 1, "filenames": [],
                          "content": "src/a.rs:3: //nolint:staticcheck"});
        assert_eq!(
            summarise("Grep", &grep).as_deref(),
            Some("src/a.rs:3: //nolint:staticcheck")
        );
        let files = json!({"numFiles": 2, "filenames": ["src/a.rs", "src/b.rs"]});
        assert_eq!(
            summarise("Glob", &files).as_deref(),
            Some("2 files: src/a.rs, src/b.rs")
        );
        assert_eq!(
            summarise("Grep", &json!({"numFiles": 0})).as_deref(),
            Some("0 files")
        );
        let cut =
            json!({"numFiles": 2, "filenames": ["a", "b"], "truncated": true, "totalMatches": 900});
        assert_eq!(
            summarise("Glob", &cut).as_deref(),
            Some("2 of 900 files: a, b")
        );
        let page = json!({"bytes": 10, "code": 200, "codeText": "OK", "durationMs": 3,
                          "url": "https://example.com", "result": "Coupons are case-insensitive."});
        assert_eq!(
            summarise("WebFetch", &page).as_deref(),
            Some("Coupons are case-insensitive.")
        );
        let gone = json!({"code": 404, "codeText": "Not Found", "result": "No page."});
        assert_eq!(
            summarise("WebFetch", &gone).as_deref(),
            Some("404 Not Found: No page.")
        );
        let search = json!({"query": "q", "durationSeconds": 1.0, "results": [
            {"tool_use_id": "s1", "content": [{"title": "Go 1.25 release notes", "url": "u"},
                                              {"title": "staticcheck SA5011", "url": "v"}]},
            "Both pages say the check was reworked."]});
        assert_eq!(
            summarise("WebSearch", &search).as_deref(),
            Some(
                "Go 1.25 release notes; staticcheck SA5011; Both pages say the check was reworked."
            )
        );
    }

    #[test]
    fn a_result_of_another_shape_reads_as_words_not_json() {
        let waited = json!({"retrieval_status": "success", "task": {
            "description": "Run the renderer tests", "exitCode": 0, "error": null,
            "output": "==> renderer\n12 tests, 0 failures"}});
        assert_eq!(
            summarise("TaskOutput", &waited).as_deref(),
            Some("retrieval_status: success; task: description: Run the renderer tests; exitCode: 0; output: ==> renderer\n12 tests, 0 failures")
        );
        let issue = json!({"identifier": "ENT-241", "title": "Run git gc at safe points",
                           "labels": [], "assignee": null, "archived": false, "priority": 1});
        assert_eq!(
            summarise("mcp__linear__get_issue", &issue).as_deref(),
            Some("identifier: ENT-241; priority: 1; title: Run git gc at safe points")
        );
        // JSON answered as text, alone or in a content block, reads the same.
        let said = issue.to_string();
        assert_eq!(
            summarise("mcp__linear__get_issue", &Value::String(said.clone())),
            summarise("mcp__linear__get_issue", &issue)
        );
        assert_eq!(
            summarise(
                "mcp__linear__get_issue",
                &json!([{"type": "text", "text": said}])
            ),
            summarise("mcp__linear__get_issue", &issue)
        );
        assert_eq!(
            summarise("mcp__x__y", &json!("[not json")).as_deref(),
            Some("[not json")
        );
        // An array of anything else is no list of blocks.
        let resources = json!([{"uri": "file:///a", "name": "a", "server": "fs"}]);
        assert_eq!(
            summarise("ListMcpResourcesTool", &resources).as_deref(),
            Some("name: a; server: fs; uri: file:///a")
        );
        assert_eq!(
            summarise("mcp__db__users", &json!([{"id": 1, "name": "alice"}])),
            summarise("mcp__db__users", &json!(r#"[{"id": 1, "name": "alice"}]"#))
        );
        // A block of another kind keeps what it holds.
        let resource = json!([{"type": "resource", "resource": {"uri": "u", "text": "row 1"}}]);
        assert_eq!(
            summarise("mcp__db__read", &resource).as_deref(),
            Some("resource: text: row 1; uri: u; type: resource")
        );
        // Content blocks are read as text.
        let blocks = json!([{"type": "text", "text": "3 issues"}, {"type": "image"}]);
        assert_eq!(
            summarise("mcp__linear__list_issues", &blocks).as_deref(),
            Some("3 issues\n[image]")
        );
        // Bounded however large; a flat object of 300,000 fields is read only as far as the
        // bound.
        let big = json!({"rows": vec!["word"; 5_000]});
        assert!(summarise("mcp__db__query", &big).unwrap().chars().count() <= RESPONSE_CHARS);
        let wide: serde_json::Map<String, Value> = (0..300_000)
            .map(|i| (format!("{i:06}"), json!(1)))
            .collect();
        let said = summarise("mcp__db__query", &Value::Object(wide)).unwrap();
        assert!(said.starts_with("000000: 1; 000001: 1"), "{said}");
        assert!(said.chars().count() <= RESPONSE_CHARS);
    }

    #[test]
    fn a_read_says_how_much_it_read_never_the_bytes_of_an_image() {
        let text = json!({"type": "text", "file": {"filePath": "/r/a.rs", "content": "fn a() {}",
                          "numLines": 7, "startLine": 1, "totalLines": 9}});
        assert_eq!(summarise("Read", &text).as_deref(), Some("7 lines of 9"));
        let png = json!({"type": "image", "file": {"base64": "iVBORw0KGgoAAAANSUhEUg",
                         "type": "image/png", "originalSize": 5120}});
        assert_eq!(
            summarise("Read", &png).as_deref(),
            Some("image/png, 5120 bytes")
        );
        let pdf = json!({"type": "pdf", "file": {"filePath": "/r/a.pdf", "base64": "JVBERi0x",
                         "originalSize": 900}});
        assert_eq!(summarise("Read", &pdf).as_deref(), Some("PDF, 900 bytes"));
        let pages = json!({"type": "parts", "file": {"filePath": "/r/a.pdf", "originalSize": 900,
                           "count": 3, "outputDir": "/tmp/p"}, "pages": [{"base64": "x", "mediaType": "image/png"}]});
        assert_eq!(summarise("Read", &pages).as_deref(), Some("3 pages"));
        let cells =
            json!({"type": "notebook", "file": {"filePath": "/r/a.ipynb", "cells": [{}, {}]}});
        assert_eq!(summarise("Read", &cells).as_deref(), Some("2 cells"));
        // Any other shape holding bytes: the bytes are left out.
        let other = json!({"name": "shot", "base64": "iVBORw0KGgo"});
        assert_eq!(
            summarise("mcp__browser__screenshot", &other).as_deref(),
            Some("name: shot")
        );
    }

    #[test]
    fn a_failure_drops_claude_codes_markers_and_a_refusal_keeps_what_the_user_said() {
        let f = failure(
            "Read",
            "<tool_use_error>File does not exist. Did you mean .golangci.yaml?</tool_use_error>",
        );
        assert_eq!(
            f.summary,
            "Read failed: File does not exist. Did you mean .golangci.yaml?"
        );
        assert_eq!(
            f.outcome.as_deref(),
            Some("File does not exist. Did you mean .golangci.yaml?")
        );
        let f = failure("Bash", "Exit code 128\nfatal: unable to read e53647ba");
        assert_eq!(f.summary, "Bash failed: Exit code 128");
        assert_eq!(
            f.outcome.as_deref(),
            Some("Exit code 128\nfatal: unable to read e53647ba")
        );
        let f = failure(
            "Edit",
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. \
             if it was a file edit, the new_string was NOT written to the file). To tell you how \
             to proceed, the user said:\nkeep the old name, callers outside this repo use it",
        );
        assert_eq!(
            f.summary,
            "Edit turned down by the user: keep the old name, callers outside this repo use it"
        );
        assert_eq!(
            f.outcome.as_deref(),
            Some("keep the old name, callers outside this repo use it")
        );
        let f = failure(
            "Bash",
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. \
             if it was a file edit, the new_string was NOT written to the file). STOP what you \
             are doing and wait for the user to tell you how to proceed.",
        );
        assert_eq!(f.summary, "Bash turned down by the user");
        assert_eq!(f.outcome, None);
        let f = failure("Bash", "   ");
        assert_eq!((f.summary.as_str(), f.outcome), ("Bash failed: ", None));
    }
}
