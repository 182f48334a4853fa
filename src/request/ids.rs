//! Ids as they arrive: a project id is 1..=128 characters of `[A-Za-z0-9._-]`; session and
//! record ids are non-blank, at most 200 characters, without control characters. Blanks
//! around either are trimmed.

use std::fmt;

use crate::domain::field::Field;
use crate::domain::validate;
use crate::error::ApiResult;

/// Declares an id type parsed by `$rule`.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident => $rule:path) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// Checks `raw`; the error names `field`.
            pub fn parse<'f>(field: impl Into<Field<'f>>, raw: &str) -> ApiResult<Self> {
                $rule(field, raw).map(Self)
            }

            /// The optional form: absent stays absent, present must be valid.
            pub fn parse_opt<'f>(
                field: impl Into<Field<'f>>,
                raw: Option<&str>,
            ) -> ApiResult<Option<Self>> {
                raw.map(|r| Self::parse(field, r)).transpose()
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A project id.
    ProjectId => validate::project
);
id_type!(
    /// A session id (the client's, e.g. Claude Code's).
    SessionId => validate::id
);
id_type!(
    /// The id of a stored record: a belief, an extraction run.
    RecordId => validate::id
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn ids_are_trimmed_and_checked() {
        assert_eq!(
            ProjectId::parse("project", " web-app ").unwrap().as_str(),
            "web-app"
        );
        let err = ProjectId::parse("project", "a/b").unwrap_err();
        assert_eq!(err.code(), Code::InvalidProject);
        assert_eq!(err.field(), Some("project"));
        assert_eq!(
            ProjectId::parse("project", " ").unwrap_err().code(),
            Code::MissingField
        );
        assert_eq!(
            SessionId::parse("id", "s\u{7}").unwrap_err().code(),
            Code::InvalidId
        );
        assert_eq!(SessionId::parse_opt("id", None).unwrap(), None);
        assert_eq!(&*RecordId::parse("id", " b1 ").unwrap(), "b1");
    }
}
