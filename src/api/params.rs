//! Query and path parameter types that state in the spec the rule the handler enforces —
//! lengths, patterns, ranges, allowed values — while leaving the check itself (and its error
//! code: `invalid_id`, `missing_field`, `invalid_budget`…) to the validation the handler
//! already runs. A value of the wrong JSON type is still `invalid_parameter`. The string
//! types also serve as body fields, where the serde decoding of `api::body` applies.

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseFromJSON, ParseFromParameter, ParseResult, ToJSON, Type};

use crate::domain::limits::{MAX_ID_CHARS, MAX_PROJECT_CHARS};
use crate::request::TokenBudget;

/// Not blank and free of control characters (`char::is_control`).
const ID_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$";
/// Letters, digits, `.`, `_`, `-` (surrounding blanks are trimmed).
const PROJECT_PATTERN: &str = r"^\s*[A-Za-z0-9._-]+\s*$";

/// Like [`ID_PATTERN`], the character that is not blank also not a comma: a list with at
/// least one item.
const LIST_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^,\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$";

fn string_schema(min: usize, max: Option<usize>, pattern: &str) -> MetaSchemaRef {
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        min_length: Some(min),
        max_length: max,
        pattern: Some(pattern.to_string()),
        ..MetaSchema::new("string")
    }))
}

/// Declares a string parameter type with the schema `$schema`.
macro_rules! string_param {
    ($(#[$doc:meta])* $name:ident => $schema:expr) => {
        $(#[$doc])*
        pub struct $name(pub String);

        impl Type for $name {
            const IS_REQUIRED: bool = true;
            type RawValueType = String;
            type RawElementValueType = String;

            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
            fn schema_ref() -> MetaSchemaRef {
                $schema
            }
            fn as_raw_value(&self) -> Option<&String> {
                Some(&self.0)
            }
            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl ParseFromParameter for $name {
            fn parse_from_parameter(value: &str) -> ParseResult<Self> {
                Ok(Self(value.to_string()))
            }
        }

        impl ParseFromJSON for $name {
            fn parse_from_json(value: Option<serde_json::Value>) -> ParseResult<Self> {
                String::parse_from_json(value)
                    .map(Self)
                    .map_err(poem_openapi::types::ParseError::propagate)
            }
        }

        impl ToJSON for $name {
            fn to_json(&self) -> Option<serde_json::Value> {
                Some(self.0.clone().into())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(Self)
            }
        }
    };
}

string_param! {
    /// A session, belief or run id: not blank, at most 200 characters, no control characters.
    IdParam => string_schema(1, Some(MAX_ID_CHARS), ID_PATTERN)
}

string_param! {
    /// A project id: 1 to 128 of `[A-Za-z0-9._-]`.
    ProjectParam => string_schema(1, Some(MAX_PROJECT_CHARS), PROJECT_PATTERN)
}

string_param! {
    /// A project id that may be left blank (then another rule names the project).
    BlankOrProjectParam => string_schema(0, Some(MAX_PROJECT_CHARS), r"^\s*[A-Za-z0-9._-]*\s*$")
}

string_param! {
    /// A decision's subject: at most 512 characters.
    SubjectParam => string_schema(0, Some(crate::domain::limits::MAX_SUBJECT_CHARS), r"^[\s\S]*$")
}

string_param! {
    /// A project-relative file path: at most 1024 characters.
    PathParam => string_schema(0, Some(crate::domain::limits::MAX_PATH_CHARS), r"^[^\u0000-\u001f\u007f-\u009f]*$")
}

string_param! {
    /// Comma-separated file paths, at least one, without control characters.
    FileListParam => string_schema(1, None, LIST_PATTERN)
}

string_param! {
    /// A belief's status.
    BeliefStatusParam => MetaSchemaRef::Inline(Box::new(MetaSchema {
        enum_items: crate::domain::state::BeliefStatus::ALL
            .iter()
            .map(|s| serde_json::Value::from(s.as_str()))
            .collect(),
        ..MetaSchema::new("string")
    }))
}

string_param! {
    /// The knowledge report's format.
    FormatParam => MetaSchemaRef::Inline(Box::new(MetaSchema {
        enum_items: vec!["json".into(), "markdown".into()],
        ..MetaSchema::new("string")
    }))
}

string_param! {
    /// A kind of turn to search (`POST /v1/search`'s `types`).
    TurnKindParam => MetaSchemaRef::Inline(Box::new(MetaSchema {
        enum_items: crate::recall::turns::TURN_KINDS
            .iter()
            .map(|k| serde_json::Value::from(*k))
            .collect(),
        ..MetaSchema::new("string")
    }))
}

/// An integer parameter the handler accepts in `MIN..=MAX`, parsed as `T`.
pub struct Ranged<T, const MIN: i64, const MAX: i64>(pub T);

impl<T: Type, const MIN: i64, const MAX: i64> Type for Ranged<T, MIN, MAX> {
    const IS_REQUIRED: bool = true;
    type RawValueType = T::RawValueType;
    type RawElementValueType = T::RawElementValueType;

    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("{}_{MIN}_{MAX}", T::name()))
    }
    fn schema_ref() -> MetaSchemaRef {
        let base = match T::schema_ref() {
            MetaSchemaRef::Inline(schema) => *schema,
            MetaSchemaRef::Reference(_) => MetaSchema::new("integer"),
        };
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            minimum: Some(MIN as f64),
            maximum: Some(MAX as f64),
            ..base
        }))
    }
    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        self.0.as_raw_value()
    }
    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        self.0.raw_element_iter()
    }
}

impl<T: ParseFromParameter, const MIN: i64, const MAX: i64> ParseFromParameter
    for Ranged<T, MIN, MAX>
{
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        T::parse_from_parameter(value)
            .map(Self)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}

/// A token budget in `request::TokenBudget`'s range.
pub type BudgetParam = Ranged<u32, { TokenBudget::MIN as i64 }, { TokenBudget::MAX as i64 }>;

/// A hook's token budget: `request::TokenBudget`'s range, or 0 for no answer.
pub struct SwitchBudgetParam(pub u32);

impl Type for SwitchBudgetParam {
    const IS_REQUIRED: bool = true;
    type RawValueType = u32;
    type RawElementValueType = u32;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SwitchBudget")
    }
    fn schema_ref() -> MetaSchemaRef {
        let off = MetaSchema {
            enum_items: vec![0.into()],
            ..MetaSchema::new("integer")
        };
        let on = MetaSchema {
            minimum: Some(TokenBudget::MIN as f64),
            maximum: Some(TokenBudget::MAX as f64),
            ..MetaSchema::new("integer")
        };
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            any_of: vec![
                MetaSchemaRef::Inline(Box::new(off)),
                MetaSchemaRef::Inline(Box::new(on)),
            ],
            ..MetaSchema::ANY
        }))
    }
    fn as_raw_value(&self) -> Option<&u32> {
        Some(&self.0)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a u32> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for SwitchBudgetParam {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        u32::parse_from_parameter(value)
            .map(Self)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}
