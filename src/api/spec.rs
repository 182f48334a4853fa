//! The document served at `/openapi.json`: poem-openapi's, with what its derives cannot say.
//! An optional property (an `Option` field) is written as `null` when absent, in answers, and
//! `null` is accepted for it in requests: such properties are marked `nullable`.

use serde_json::{json, Value};

/// The served document, from the generated one.
pub fn document(generated: &str) -> Value {
    let mut spec: Value = serde_json::from_str(generated).unwrap_or_default();
    bookmarks(&mut spec);
    if let Some(schemas) = spec["components"]["schemas"].as_object_mut() {
        for schema in schemas.values_mut() {
            nullable_optionals(schema);
        }
        if let Some(op) = schemas.get_mut("OperationInput") {
            op["anyOf"] = operation_kinds();
            // RFC 3339, or blank for the arrival time (`domain::validate::instant`).
            op["properties"]["at"] = json!({
                "type": "string",
                "nullable": true,
                "anyOf": [{"format": "date-time"}, {"pattern": "^\\s*$"}]
            });
            op["properties"]["context"] =
                json!({"type": "object", "nullable": true, "additionalProperties": true});
        }
        if let Some(context) = schemas.get_mut("ContextBody") {
            // Context for a session, a task, or both (`api::recall::context`).
            context["anyOf"] = json!([
                {"required": ["session_id"], "properties": {"session_id": {"type": "string"}}},
                {"required": ["task"], "properties": {"task": {"type": "string", "pattern": "\\S"}}}
            ]);
        }
        // List items that must be text (`domain::validate`): not blank; paths also free of
        // control characters.
        let text = json!({"type": "string", "minLength": 1, "pattern": "\\S"});
        let path = json!({"type": "string", "minLength": 1, "maxLength": 1024,
            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"});
        for (schema, list, item) in [
            ("SessionClose", "next_steps", &text),
            ("DecisionInput", "alternatives", &text),
            ("DecisionInput", "files", &path),
            ("OperationInput", "files_read", &path),
            ("OperationInput", "files_modified", &path),
        ] {
            if let Some(property) = schemas
                .get_mut(schema)
                .and_then(|s| s.get_mut("properties"))
                .and_then(|p| p.get_mut(list))
            {
                property["items"] = item.clone();
            }
        }
        if let Some(decision) = schemas.get_mut("DecisionInput") {
            decision["properties"]["affects_beliefs"]["items"] = belief_reference();
        }
    }
    spec
}

/// `X-Cairn-Bookmark` (`api::bookmark`): every `/v1` operation reads after the bookmarks
/// it is sent; every `/v1` write answers those of what it committed.
fn bookmarks(spec: &mut Value) {
    use crate::graph::causal::{FIELD, MAX_BOOKMARKS, MAX_BOOKMARK_CHARS, MAX_HEADER_BYTES};
    let one = format!("FB:[A-Za-z0-9+/=]{{1,{}}}", MAX_BOOKMARK_CHARS - 3);
    let parameter = json!({
        "name": FIELD,
        "in": "header",
        "required": false,
        "description": format!(
            "Neo4j bookmarks answered by an earlier write (on any replica), sent back as \
             they came: this request's reads wait until the Neo4j member serving them has \
             applied those writes (read-your-writes when reads go to a cluster's readers). \
             At most {MAX_BOOKMARKS}, comma-separated; malformed or unknown: 400 \
             `invalid_bookmark`."
        ),
        "schema": {
            "type": "string",
            "maxLength": MAX_HEADER_BYTES,
            "pattern": format!("^\\s*{one}(\\s*,\\s*{one})*\\s*$"),
        }
    });
    let answered = json!({
        "description": "The Neo4j bookmarks of the writes this request committed (absent \
            when it committed none, e.g. answered 202): send them back in this header to \
            read those writes through any replica.",
        "schema": {"type": "string"}
    });
    spec["components"]["parameters"][FIELD] = parameter;
    spec["components"]["headers"][FIELD] = answered;
    let parameter = json!({"$ref": format!("#/components/parameters/{FIELD}")});
    let answered = json!({"$ref": format!("#/components/headers/{FIELD}")});
    let Some(paths) = spec["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        if !path.starts_with("/v1/") {
            continue;
        }
        let Some(methods) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in methods.iter_mut() {
            if let Some(params) = op["parameters"].as_array_mut() {
                params.push(parameter.clone());
            } else {
                op["parameters"] = json!([parameter.clone()]);
            }
            if method == "get" {
                continue;
            }
            let Some(responses) = op["responses"].as_object_mut() else {
                continue;
            };
            for (status, response) in responses.iter_mut() {
                if status.starts_with('2') {
                    response["headers"][FIELD] = answered.clone();
                }
            }
        }
    }
}

/// What each operation type needs besides its `type` (`domain::validate::operation`): a
/// `message` its `role` and `content`, a `todo` its `todos`, every other type a `summary`.
fn operation_kinds() -> Value {
    let text = json!({"type": "string", "minLength": 1, "pattern": "\\S"});
    json!([
        {"required": ["summary"], "properties": {
            "type": {"enum": ["read", "write", "tool_call", "search", "decision"]},
            "summary": text}},
        {"required": ["role", "content"], "properties": {
            "type": {"enum": ["message"]},
            "role": {"type": "string", "pattern": "^\\s*(user|assistant)\\s*$"},
            "content": text}},
        {"required": ["todos"], "properties": {
            "type": {"enum": ["todo"]},
            "todos": {"type": "array"}}}
    ])
}

/// A belief a decision bears on: its id, or `{id, effect?, weight?}`
/// (`domain::validate::belief_refs`).
fn belief_reference() -> Value {
    let id = <super::params::IdParam as poem_openapi::types::Type>::schema_ref();
    let id = serde_json::to_value(id).unwrap_or_default();
    json!({"anyOf": [id, {
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": id,
            "effect": {"type": "string", "enum": ["supports", "contradicts"]},
            "weight": {"type": "number", "minimum": 0, "maximum": 1}
        }
    }]})
}

fn nullable_optionals(schema: &mut Value) {
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        // Required, or defaulted when absent (serde then refuses `null`).
        if required.contains(name) || property.get("default").is_some() {
            continue;
        }
        if property.get("$ref").is_some() {
            let target = property.take();
            *property = json!({"allOf": [target], "nullable": true});
        } else if let Some(p) = property.as_object_mut() {
            p.insert("nullable".into(), Value::Bool(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_properties_may_be_null() {
        let generated = json!({"components": {"schemas": {"Row": {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "string"},
                "closed_at": {"type": "integer"},
                "mode": {"$ref": "#/components/schemas/Mode"}
            }
        }}}});
        let spec = document(&generated.to_string());
        let props = &spec["components"]["schemas"]["Row"]["properties"];
        assert!(props["id"].get("nullable").is_none());
        assert_eq!(props["closed_at"]["nullable"], true);
        assert_eq!(
            props["mode"]["allOf"][0]["$ref"],
            "#/components/schemas/Mode"
        );
        assert_eq!(props["mode"]["nullable"], true);
    }
}
