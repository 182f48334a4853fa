//! [`JsonBody`]: a JSON request body decoded straight into its type with serde, documented
//! in the spec with the type's schema. One pass over the bytes, where poem-openapi's `Json`
//! builds a `serde_json::Value` first and converts that; capture bodies are the service's
//! hottest input. A body that does not fit is refused with the JSON path of the field at
//! fault, found by decoding it a second time with path tracking (only ever on failure).

use poem::{Request, RequestBody};
use poem_openapi::{
    error::ContentTypeError,
    payload::{Json, Payload},
    registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry},
    types::Type,
    ApiExtractor, ApiExtractorType, ExtractParamOptions,
};
use serde::de::{Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::error_response;
use crate::error::{ApiError, Code};

/// A request body of type `T`.
pub struct JsonBody<T>(pub T);

impl<T> std::ops::Deref for JsonBody<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn check_content_type(content_type: &str) -> bool {
        Json::<T>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<'a, T: Type + DeserializeOwned> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType {
                content_type: Self::CONTENT_TYPE,
                schema: Self::schema_ref(),
            }],
            required: true,
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        match request.content_type() {
            Some(ct) if Self::check_content_type(ct) => {}
            Some(ct) => {
                return Err(ContentTypeError::NotSupported {
                    content_type: ct.to_string(),
                }
                .into())
            }
            None => return Err(ContentTypeError::ExpectContentType.into()),
        }
        let bytes = body.take()?.into_bytes().await?;
        decode(&bytes)
            .map(Self)
            .map_err(|err| poem::Error::from_response(error_response(&err)))
    }
}

/// Decodes `bytes`, or says why not: (code, message, field). A body that is not JSON at all
/// (bad UTF-8 anywhere, broken syntax, a lone surrogate escape, nesting past the parser's
/// limit) is `malformed_json`, also where the bad part sits in a field the type ignores.
fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let malformed = |err: &dyn std::fmt::Display| {
        ApiError::new(Code::MalformedJson)
            .with_message(format!("the body is not valid JSON: {err}"))
    };
    let text = std::str::from_utf8(bytes).map_err(|e| malformed(&e))?;
    if text.trim().is_empty() {
        return Err(ApiError::new(Code::MalformedJson).with_message("a JSON body is required"));
    }
    serde_json::from_str::<WellFormed>(text).map_err(|e| malformed(&e))?;
    let err = match serde_json::from_str(text) {
        Ok(v) => return Ok(v),
        Err(err) => err,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let (reason, field) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Err(e) => {
            let path = e.path().to_string();
            let reason = e.inner().to_string();
            let field = field_at(&path, &reason);
            (reason, field)
        }
        // Unreachable for a deterministic decoder; report the first error without a field.
        Ok(_) => (err.to_string(), None),
    };
    let err = ApiError::new(Code::InvalidBody).with_message(format!(
        "the JSON body does not fit the schema (see /docs): {reason}"
    ));
    Err(match field {
        Some(field) => err.on(field),
        None => err,
    })
}

/// Any well-formed JSON, checked the strict way all through (serde skips the values a type
/// ignores without checking their escapes or depth) and stored nowhere: a pass over the
/// body that allocates nothing.
struct WellFormed;

impl<'de> Deserialize<'de> for WellFormed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WellFormed)
    }
}

impl<'de> Visitor<'de> for WellFormed {
    type Value = WellFormed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<WellFormed>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<WellFormed, WellFormed>()?.is_some() {}
        Ok(self)
    }
}

/// The field at fault: the path where decoding stopped, or for a missing field, the field
/// itself (`operations[0].summary`, not `operations[0]`).
fn field_at(path: &str, reason: &str) -> Option<String> {
    let path = (path != ".").then(|| path.to_string());
    let missing = reason
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next());
    match (path, missing) {
        (Some(p), Some(m)) => Some(format!("{p}.{m}")),
        (None, Some(m)) => Some(m.to_string()),
        (p, None) => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Batch {
        operations: Vec<Op>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Op {
        #[serde(rename = "type")]
        kind: String,
        summary: Option<String>,
    }

    fn refusal(body: &str) -> (&'static str, Option<String>) {
        let err = decode::<Batch>(body.as_bytes()).unwrap_err();
        (err.code().as_str(), err.field().map(str::to_string))
    }

    #[test]
    fn decodes_and_names_the_field_at_fault() {
        let ok = decode::<Batch>(br#"{"operations":[{"type":"read","summary":"x"}]}"#).unwrap();
        assert_eq!(ok.operations[0].kind, "read");
        assert_eq!(
            refusal(r#"{"operations":[{"type":"read"},{"type":"read","summary":5}]}"#),
            ("invalid_body", Some("operations[1].summary".into()))
        );
        assert_eq!(
            refusal(r#"{"operations":[{"summary":"x"}]}"#),
            ("invalid_body", Some("operations[0].type".into()))
        );
        assert_eq!(refusal("{}"), ("invalid_body", Some("operations".into())));
        assert_eq!(refusal(r#"{"operations": "#), ("malformed_json", None));
        assert_eq!(refusal("  "), ("malformed_json", None));
        assert_eq!(refusal("[1, 2"), ("malformed_json", None));
        assert_eq!(refusal(&"[".repeat(40)), ("malformed_json", None));
        assert_eq!(
            refusal(&format!("{}1{}", "[".repeat(200), "]".repeat(200))),
            ("malformed_json", None)
        );
        let lone_surrogate = r#"{"operations": [], "x": "\ud800"}"#;
        assert_eq!(refusal(lone_surrogate), ("malformed_json", None));
        let ignored_deep = format!(
            r#"{{"operations": [], "x": {}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(refusal(&ignored_deep), ("malformed_json", None));
        let bad_utf8 = b"{\"operations\": [], \"x\": \"\xff\"}";
        assert_eq!(
            decode::<Batch>(bad_utf8).unwrap_err().code().as_str(),
            "malformed_json"
        );
    }
}
