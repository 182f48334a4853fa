//! A Claude Code hook event, as posted to `/v1/hooks/claude-code` or piped to `cairn hook`:
//! parsing and mapping never panic, redaction leaves nothing it would catch, and the plan
//! only holds what capture accepts.

#![no_main]

use cairn::claude::{mapping, redact};
use cairn_fuzz::{
    assert_operation_redacted, assert_redaction_fixpoint, assert_valid_operations,
    assert_valid_start,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let mut redacted = raw.clone();
    redact::value(&mut redacted);
    assert_redaction_fixpoint(&redacted);
    let Ok(event) = mapping::parse(raw) else {
        return;
    };
    let Ok(plan) = mapping::plan(&event, "fuzz") else {
        return;
    };
    let cwd = assert_valid_start(&plan.start);
    assert_valid_operations(&plan.operations, cwd.as_deref());
    plan.operations.iter().for_each(assert_operation_redacted);
});
