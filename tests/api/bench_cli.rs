//! `cairn bench …` runs the benchmarks' binary with every argument as given and exits with
//! its code; a binary that is not there is named, with how to build it.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
fn cairn_bench_hands_its_arguments_to_the_benchmarks_and_returns_their_code() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("args");
    let fake = dir.path().join("cairn-bench");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit 7\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "bench",
            "recall-quality",
            "--modes",
            "hybrid",
            "--help",
            "a b",
        ])
        .env("CAIRN_BENCH_BIN", &fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    let args = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(args, "recall-quality\n--modes\nhybrid\n--help\na b\n");

    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["bench", "recall"])
        .env("CAIRN_BENCH_BIN", dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("CAIRN_BENCH_BIN") && err.contains("make bench"),
        "{err}"
    );
}
