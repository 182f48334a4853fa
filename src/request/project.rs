//! Which project a request touches — one rule for every door: the project the request
//! names; else the key's own project; else (a Claude Code hook only) the git root of the
//! event's working directory. A key of one project may name only that project — any other
//! name, malformed or not, is refused (403), a blank one is missing (400); otherwise the name is parsed as a
//! [`ProjectId`] and the key's scope checked. A key for every project (local insecure mode) must be told the project.

use crate::auth::{Principal, Scope};
use crate::error::{ApiError, ApiResult};

use super::ProjectId;

/// The project of a request that must have one.
pub fn resolve(who: &Principal, named: Option<&str>, scope: Scope) -> ApiResult<ProjectId> {
    resolve_or(who, named, || None, scope)
}

/// [`resolve`], with a last resort when neither the request nor the key names a project.
pub fn resolve_or(
    who: &Principal,
    named: Option<&str>,
    fallback: impl FnOnce() -> Option<String>,
    scope: Scope,
) -> ApiResult<ProjectId> {
    // A key of one project names only that one: anything else is refused, malformed or not
    // (a blank name is a missing one).
    if let (Some(own), Some(asked)) = (who.project_scope(), named.map(str::trim)) {
        if !asked.is_empty() && asked != own {
            return Err(ApiError::forbidden().on("project"));
        }
    }
    let project = match named.or(who.project_scope()) {
        Some(name) => ProjectId::parse("project", name)?,
        None => match fallback() {
            Some(name) => ProjectId::parse("project", &name)?,
            None => return Err(ApiError::missing("project")),
        },
    };
    who.require(&project, scope)?;
    Ok(project)
}

/// For a route addressed by a record's id: the project when the request or the key names
/// one (checked), `None` for a key of every project that names none — the record found
/// then says which project it is in.
pub fn scoped(who: &Principal, named: Option<&str>, scope: Scope) -> ApiResult<Option<ProjectId>> {
    if named.is_none() && who.project_scope().is_none() {
        return Ok(None);
    }
    resolve(who, named, scope).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    fn key(project: &str, scope: Scope) -> Principal {
        Principal {
            project: Some(project.into()),
            scope,
            key_id: Some("k".into()),
        }
    }

    #[test]
    fn the_named_project_then_the_keys_then_the_fallback() {
        let k = key("web", Scope::Write);
        assert_eq!(
            resolve(&k, Some(" web "), Scope::Read).unwrap().as_str(),
            "web"
        );
        assert_eq!(resolve(&k, None, Scope::Write).unwrap().as_str(), "web");
        let open = Principal::insecure();
        assert_eq!(
            resolve_or(&open, None, || Some("repo".into()), Scope::Write)
                .unwrap()
                .as_str(),
            "repo"
        );
        assert_eq!(
            resolve(&open, None, Scope::Read).unwrap_err().code(),
            Code::MissingField
        );
        assert_eq!(scoped(&open, None, Scope::Read).unwrap(), None);
    }

    #[test]
    fn another_project_or_a_lesser_scope_is_refused() {
        let k = key("web", Scope::Read);
        let refused = resolve(&k, Some("api"), Scope::Read).unwrap_err();
        assert_eq!(refused.code(), Code::Forbidden);
        assert_eq!(refused.body().error.field.as_deref(), Some("project"));
        assert_eq!(
            resolve(&k, None, Scope::Write).unwrap_err().code(),
            Code::InsufficientScope
        );
        assert_eq!(
            resolve(&k, Some("a b"), Scope::Read).unwrap_err().code(),
            Code::Forbidden
        );
        assert_eq!(
            resolve(&Principal::insecure(), Some("a b"), Scope::Read)
                .unwrap_err()
                .code(),
            Code::InvalidProject
        );
    }
}
