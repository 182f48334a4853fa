//! `cairn bench …`: the benchmarks, which live in their own binary (`cairn-bench`, the
//! workspace's `crates/bench`), run under the name they had when they were part of `cairn`.
//! Every argument goes to `cairn-bench` unchanged, and its exit code is this command's.
//! The binary is `CAIRN_BENCH_BIN` when set, else the `cairn-bench` beside this executable
//! (where `make bench` and `cargo build --workspace` put it), else the first on `PATH`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The name of the benchmarks' binary.
const BENCH: &str = "cairn-bench";

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct BenchArgs {
    /// The benchmark and its flags, as `cairn-bench` takes them (`cairn bench --help` lists
    /// the benchmarks).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// Runs `cairn-bench` with `args`; returns its exit code.
pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    let explicit = std::env::var_os("CAIRN_BENCH_BIN").map(PathBuf::from);
    let me = std::env::current_exe().ok();
    let path = std::env::var_os("PATH");
    let bin = locate(explicit, me.as_deref(), path.as_deref())?;
    let status = std::process::Command::new(&bin)
        .args(&args.args)
        .status()
        .with_context(|| format!("could not start {}", bin.display()))?;
    // A benchmark ended by a signal has no code: report it as a failure.
    Ok(status.code().unwrap_or(1))
}

/// Where the benchmarks' binary is: `explicit` (which must exist), beside `me`, or on `path`.
fn locate(
    explicit: Option<PathBuf>,
    me: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> anyhow::Result<PathBuf> {
    if let Some(bin) = explicit {
        anyhow::ensure!(
            bin.is_file(),
            "CAIRN_BENCH_BIN names {}, which is not a file: build the benchmarks (`make bench`) \
             or unset it",
            bin.display()
        );
        return Ok(bin);
    }
    let beside = me.and_then(Path::parent).map(|dir| dir.join(BENCH));
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(BENCH));
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "the benchmarks are not built: no {BENCH} beside {} nor on PATH. Build them with \
                 `make bench` (release, in target/release) or `cargo build --release -p \
                 cairn-bench`, or name the binary in CAIRN_BENCH_BIN",
                me.map_or_else(
                    || "this executable".to_string(),
                    |m| m.display().to_string()
                )
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, b"").unwrap();
        p
    }

    #[test]
    fn the_binary_beside_comes_before_the_one_on_path() {
        let root = tempfile::tempdir().unwrap();
        let me = touch(&root.path().join("release"), "cairn");
        let beside = touch(&root.path().join("release"), BENCH);
        let elsewhere = touch(&root.path().join("bin"), BENCH);
        let path = std::env::join_paths([elsewhere.parent().unwrap()]).unwrap();
        assert_eq!(locate(None, Some(&me), Some(&path)).unwrap(), beside);
        std::fs::remove_file(&beside).unwrap();
        assert_eq!(locate(None, Some(&me), Some(&path)).unwrap(), elsewhere);
    }

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let root = tempfile::tempdir().unwrap();
        let me = touch(root.path(), "cairn");
        let err = locate(None, Some(&me), None).unwrap_err().to_string();
        assert!(err.contains("make bench"), "{err}");
        let named = root.path().join("nowhere").join(BENCH);
        let err = locate(Some(named), Some(&me), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("CAIRN_BENCH_BIN"), "{err}");
    }
}
