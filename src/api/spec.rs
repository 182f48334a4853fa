//! The document served at `/openapi.json`: poem-openapi's, with what its derives cannot say.
//! An optional property (an `Option` field) is written as `null` when absent, in answers, and
//! `null` is accepted for it in requests: such properties are marked `nullable`.

use serde_json::{json, Value};

/// The served document, from the generated one.
pub fn document(generated: &str) -> Value {
    let mut spec: Value = serde_json::from_str(generated).unwrap_or_default();
    if let Some(schemas) = spec["components"]["schemas"].as_object_mut() {
        for schema in schemas.values_mut() {
            nullable_optionals(schema);
        }
        if let Some(op) = schemas.get_mut("OperationInput") {
            op["anyOf"] = operation_kinds();
        }
        if let Some(close) = schemas.get_mut("SessionClose") {
            // Each next step is text (`domain::validate::session_close`).
            close["properties"]["next_steps"]["items"] =
                json!({"type": "string", "minLength": 1, "pattern": "\\S"});
        }
        if let Some(decision) = schemas.get_mut("DecisionInput") {
            decision["properties"]["affects_beliefs"]["items"] = belief_reference();
        }
    }
    spec
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
        {"required": ["todos"], "properties": {"type": {"enum": ["todo"]}}}
    ])
}

/// A belief a decision bears on: its id, or `{id, effect?, weight?}`
/// (`domain::validate::belief_refs`).
fn belief_reference() -> Value {
    let id = json!({"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"});
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
    let Some(properties) = schema["properties"].as_object_mut() else {
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
