//! The deployment files people run cairn with — `docker-compose.yml` (two replicas behind a
//! proxy) and `deploy/k8s/` (a StatefulSet) — checked by `scripts/check-deploy` against the
//! JSON schemas shipped in `deploy/schemas/` (no network): the Compose specification and the
//! Kubernetes v1.31 API in strict form (unknown fields refused), plus what replicas need (a
//! spool volume each, readiness on /readyz, time to drain, a PodDisruptionBudget).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// An interpreter with `jsonschema` and `yaml`: `CAIRN_TEST_PYTHON`, `.venv-test` (`make test`
/// installs both there), else `python3`.
fn python() -> String {
    let candidates = [
        std::env::var("CAIRN_TEST_PYTHON").ok(),
        Some(format!("{}/.venv-test/bin/python", root().display())),
        Some("python3".to_string()),
    ];
    for p in candidates.into_iter().flatten() {
        let ok = Command::new(&p)
            .args(["-c", "import jsonschema, yaml, referencing"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return p;
        }
    }
    panic!("no Python with jsonschema and pyyaml: run `make .venv-test/.deploy-check`");
}

fn check(dir: &Path) -> (bool, String) {
    let out = Command::new(python())
        .arg(root().join("scripts/check-deploy"))
        .arg(dir)
        .output()
        .expect("run scripts/check-deploy");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn compose_and_kubernetes_files_match_their_schemas_and_run_replicas_safely() {
    let (ok, text) = check(root());
    assert!(ok, "{text}");
    assert!(text.contains("check out"), "{text}");
}

/// A copy of the deployment files with `edit` applied to `file`.
fn broken(file: &str, from: &str, to: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let copy = |rel: &str| -> PathBuf {
        let dest = dir.path().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(root().join(rel), &dest).unwrap();
        dest
    };
    copy("docker-compose.yml");
    for sub in ["deploy/schemas", "deploy/k8s"] {
        for e in std::fs::read_dir(root().join(sub)).unwrap() {
            let name = e.unwrap().file_name();
            copy(&format!("{sub}/{}", name.to_string_lossy()));
        }
    }
    let path = dir.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} has no {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    dir
}

#[test]
fn the_checker_refuses_unknown_fields_and_unsafe_replicas() {
    for (file, from, to, expected) in [
        (
            "deploy/k8s/statefulset.yaml",
            "terminationGracePeriodSeconds: 60",
            "terminationGracePeriod: 60",
            "'terminationGracePeriod' was unexpected",
        ),
        (
            "deploy/k8s/statefulset.yaml",
            "path: /readyz",
            "path: /healthz",
            "readiness is not /readyz",
        ),
        (
            "deploy/k8s/pdb.yaml",
            "minAvailable: 1",
            "minAvailable: [1]",
            "pdb.yaml",
        ),
        (
            "docker-compose.yml",
            "- cairn-2-spool:/var/lib/cairn/spool",
            "- cairn-1-spool:/var/lib/cairn/spool",
            "share a spool volume",
        ),
        (
            "docker-compose.yml",
            "stop_grace_period: 60s",
            "stop_grace: 60s",
            "'stop_grace' does not match",
        ),
    ] {
        let dir = broken(file, from, to);
        let (ok, text) = check(dir.path());
        assert!(!ok, "{file}: {to:?} passed:\n{text}");
        assert!(text.contains(expected), "{file}: {to:?}:\n{text}");
    }
}
