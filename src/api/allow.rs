//! The methods each path serves, read from the spec once, so a 405 can say which ones are
//! allowed in its `Allow` header (RFC 9110 §15.5.6).

use poem::http::Method;

/// Path templates (`/v1/sessions/{id}`) with the methods the spec lists for them.
pub struct AllowTable {
    paths: Vec<(Vec<String>, Vec<String>)>,
}

impl AllowTable {
    /// From the OpenAPI document's `paths`.
    pub fn from_spec(spec: &serde_json::Value) -> Self {
        let mut paths = Vec::new();
        if let Some(items) = spec["paths"].as_object() {
            for (path, item) in items {
                let mut methods: Vec<String> = item
                    .as_object()
                    .map(|ops| ops.keys().map(|m| m.to_ascii_uppercase()).collect())
                    .unwrap_or_default();
                if methods.iter().any(|m| m == Method::GET.as_str()) {
                    methods.push(Method::HEAD.to_string());
                }
                methods.sort();
                paths.push((segments(path), methods));
            }
        }
        Self { paths }
    }

    /// The `Allow` value for a request path: the methods of the template it matches.
    pub fn allow(&self, path: &str) -> Option<String> {
        let asked = segments(path);
        self.paths
            .iter()
            .filter(|(template, _)| matches(template, &asked))
            .min_by_key(|(template, _)| template.iter().filter(|s| s.starts_with('{')).count())
            .map(|(_, methods)| methods.join(", "))
    }
}

fn segments(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .map(str::to_string)
        .collect()
}

fn matches(template: &[String], asked: &[String]) -> bool {
    template.len() == asked.len()
        && template
            .iter()
            .zip(asked)
            .all(|(t, a)| t == a || (t.starts_with('{') && !a.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_literal_template_names_the_methods() {
        let spec = serde_json::json!({"paths": {
            "/v1/sessions/{id}": {"get": {}, "delete": {}},
            "/v1/sessions/search": {"post": {}},
            "/v1/decisions": {"get": {}, "post": {}},
        }});
        let table = AllowTable::from_spec(&spec);
        assert_eq!(
            table.allow("/v1/sessions/abc").as_deref(),
            Some("DELETE, GET, HEAD")
        );
        assert_eq!(table.allow("/v1/sessions/search").as_deref(), Some("POST"));
        assert_eq!(
            table.allow("/v1/decisions").as_deref(),
            Some("GET, HEAD, POST")
        );
        assert_eq!(table.allow("/v1/nothing/here/at/all"), None);
    }
}
