//! Lucene query text built from untrusted words: every character of the classic query
//! parser's syntax escaped ([`escape_lucene`]), and the clause that narrows a query on a
//! shared full-text index to one project ([`project_clause`]).

/// Escapes every character the Lucene classic query parser treats as syntax.
pub fn escape_lucene(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(
            c,
            '+' | '-'
                | '&'
                | '|'
                | '!'
                | '('
                | ')'
                | '{'
                | '}'
                | '['
                | ']'
                | '^'
                | '"'
                | '~'
                | '*'
                | '?'
                | ':'
                | '\\'
                | '/'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The Lucene clause that narrows a query to `project`: each word of the id required on its
/// own, not as a phrase. Every index holds every project, and a phrase has to check the
/// words' positions in each of the project's documents — at a million operations, most of a
/// search's time. The words alone may also match a project whose id holds the same words in
/// another order (or more of them), as the phrase matched ids that extend it; every
/// statement keeps only `node.project = $project` after the index answers.
///
/// The id is cut where the index's tokenizer always cuts (spaces, `-`, `/`, `@` and the
/// like); `_`, `.`, `'` and `:` stay inside a piece, and the query parser cuts the piece as
/// the index did (two words from one piece, or a stop word, only widen the match).
pub fn project_clause(project: &str) -> String {
    let pieces: Vec<String> = project
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '\'' | ':')))
        .filter(|p| p.chars().any(char::is_alphanumeric))
        .map(|p| format!("+project:{}", escape_lucene(&p.to_lowercase())))
        .collect();
    if pieces.is_empty() {
        return format!("+project:\"{}\"", escape_lucene(project));
    }
    format!("+({})", pieces.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_narrowed_to_by_its_words_each_required() {
        assert_eq!(
            project_clause("bench-ui-10k"),
            "+(+project:bench +project:ui +project:10k)"
        );
        // What the tokenizer keeps inside a word stays in one piece, escaped.
        assert_eq!(
            project_clause("Team/my_app:v1.2"),
            "+(+project:team +project:my_app\\:v1.2)"
        );
        // Nothing to cut: the phrase, as before.
        assert_eq!(project_clause("--"), "+project:\"\\-\\-\"");
    }
}
