//! A Claude Code transcript, as `cairn import claude-code` reads it: parsing never panics or
//! fails, every line is counted, and each rebuilt session is one the API accepts whole (start,
//! operations, close) with nothing left in it that redaction would catch.

#![no_main]

use cairn::claude::transcript;
use cairn::domain::validate;
use cairn_fuzz::{
    assert_operation_redacted, assert_redacted, assert_valid_operations, assert_valid_start,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = transcript::parse(data);
    let lines = data.split(|b| *b == b'\n').count();
    assert!(
        t.lines <= lines && t.bad_lines <= lines,
        "{t:?} from {lines} lines"
    );
    for s in &t.sessions {
        let cwd = assert_valid_start(&s.start("fuzz"));
        assert_valid_operations(&s.operations, cwd.as_deref());
        s.operations.iter().for_each(assert_operation_redacted);
        let close = validate::session_close(s.id.clone(), "fuzz".into(), &s.close(), 0);
        if let Err(e) = close {
            panic!(
                "the close fails validation ({}: {e}): {:?}",
                e.code(),
                s.summary
            );
        }
        std::iter::once(&s.id)
            .chain(&s.cwd)
            .chain(&s.summary)
            .for_each(|v| assert_redacted(v));
    }
    let mut ids: Vec<&str> = t.sessions.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), t.sessions.len(), "a session was split in two");
});
