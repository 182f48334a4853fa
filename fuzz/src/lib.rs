//! The invariants the fuzz targets assert about what the Claude Code parsers hand to capture:
//! it is accepted by the same validation the API applies, it stays within the documented
//! bounds, and nothing in it is something redaction would still replace.

use cairn::claude::{mapping::RESPONSE_CHARS, redact};
use cairn::domain::{
    limits::MAX_OPERATIONS_PER_BATCH, operation::OperationInput, record::SessionStart, validate,
};
use serde_json::Value;

/// The session start passes `POST /v1/sessions` validation; returns the working directory
/// capture keeps for it.
pub fn assert_valid_start(start: &SessionStart) -> Option<String> {
    match validate::session_start(start, 0) {
        Ok(s) => s.cwd,
        Err(e) => panic!(
            "session start fails validation ({}: {e}): {start:?}",
            e.code()
        ),
    }
}

/// Every operation passes the validation `POST /v1/sessions/{id}/operations` applies in a
/// session whose working directory is `cwd`, and keeps at most [`RESPONSE_CHARS`] of a tool
/// response.
pub fn assert_valid_operations(ops: &[OperationInput], cwd: Option<&str>) {
    for (i, batch) in ops.chunks(MAX_OPERATIONS_PER_BATCH).enumerate() {
        for (j, op) in batch.iter().enumerate() {
            let field = format!("operations[{j}] of batch {i}");
            if let Err(e) = validate::operation(&field, op, cwd, 0) {
                panic!("{field} fails validation ({}: {e}): {op:?}", e.code());
            }
            let response = op.context.as_ref().and_then(|c| c.get("response"));
            if let Some(r) = response.and_then(Value::as_str) {
                assert!(
                    r.chars().count() <= RESPONSE_CHARS,
                    "a tool response of {} characters was kept",
                    r.chars().count()
                );
            }
        }
    }
}

/// Redacting `v` again changes nothing: no secret it would catch is left in it.
pub fn assert_redaction_fixpoint(v: &Value) {
    let mut again = v.clone();
    redact::value(&mut again);
    assert_eq!(&again, v, "a second redaction pass still found something");
}

/// Every string an operation carries is already redacted.
pub fn assert_operation_redacted(op: &OperationInput) {
    let texts = [
        &op.target,
        &op.summary,
        &op.tool,
        &op.content,
        &op.rationale,
    ];
    for s in texts.into_iter().flatten() {
        assert_redacted(s);
    }
    for t in op.todos.iter().flatten() {
        assert_redacted(&t.content);
        t.id.as_deref().map(assert_redacted);
    }
    for f in op.files_read.iter().chain(&op.files_modified).flatten() {
        assert_redacted(f);
    }
    if let Some(c) = &op.context {
        strings(c, &mut |s| assert_redacted(s));
    }
}

/// Redaction finds nothing in `s`. A mark cut short by a length limit (`[REDAC…`, or cut
/// before it began: `TOKEN=…`) still counts as a mark: the secret it replaced is gone either
/// way.
pub fn assert_redacted(s: &str) {
    let mut whole = s.to_string();
    for n in (0..redact::MARK.len()).rev() {
        whole = whole.replace(
            &format!("{}…", &redact::MARK[..n]),
            &format!("{}…", redact::MARK),
        );
    }
    let again = redact::text(&whole);
    assert_eq!(again, whole, "redaction still finds something in {s:?}");
}

/// Calls `f` on every string in `v` (object keys included).
pub fn strings(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|i| strings(i, f)),
        Value::Object(map) => map.iter().for_each(|(k, i)| {
            f(k);
            strings(i, f)
        }),
        _ => {}
    }
}
