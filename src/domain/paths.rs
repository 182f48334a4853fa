//! File paths as cairn stores them: forward slashes, `.`/`..` resolved lexically, and relative
//! to the project's working directory when one is known.

/// Normalises `path`; when it lies under `cwd` it becomes relative to it.
pub fn normalize(path: &str, cwd: Option<&str>) -> String {
    let path = path.trim().replace('\\', "/");
    let absolute = path.starts_with('/');
    let cleaned = clean(&path, absolute);
    if let Some(cwd) = cwd.map(|c| clean(&c.trim().replace('\\', "/"), c.starts_with('/'))) {
        if absolute && !cwd.is_empty() {
            if cleaned == cwd {
                return ".".into();
            }
            if let Some(rest) = cleaned.strip_prefix(&format!("{}/", cwd.trim_end_matches('/'))) {
                return rest.to_string();
            }
        }
    }
    cleaned
}

fn clean(path: &str, absolute: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn relative_to_cwd_and_cleaned() {
        assert_eq!(
            normalize("/repo/src/./a/../b.rs", Some("/repo")),
            "src/b.rs"
        );
        assert_eq!(normalize("src\\lib.rs", None), "src/lib.rs");
        assert_eq!(normalize("./x//y.rs", Some("/repo")), "x/y.rs");
        assert_eq!(normalize("/other/z.rs", Some("/repo")), "/other/z.rs");
        assert_eq!(normalize("/repo", Some("/repo/")), ".");
        assert_eq!(normalize("../up.rs", None), "../up.rs");
        assert_eq!(
            normalize("/repository/x.rs", Some("/repo")),
            "/repository/x.rs"
        );
    }
}
