//! Python's `repr` of strings and JSON values: the observations OpenManus builds with Python's
//! `str()` of dicts and lists (`extract_content`, dropdown options) read the same here. Shared by
//! [`crate::extract`] and the `browser_use` tool, below both.

use serde_json::Value;

/// Python's `repr` of a string.
pub(crate) fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr` of a JSON value (`{'k': 'v'}`, `True`, `None`, ...).
#[must_use]
pub fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn python_repr_of_nested_values() {
        let value = json!({"text": "it's", "metadata": {"source": "main"}, "n": [1, true, null]});
        assert_eq!(
            py_repr(&value),
            r#"{'metadata': {'source': 'main'}, 'n': [1, True, None], 'text': "it's"}"#
        );
    }

    #[test]
    fn a_string_with_a_single_quote_is_double_quoted_and_escapes_are_python_s() {
        assert_eq!(py_str("it's"), r#""it's""#);
        assert_eq!(py_str("a\tb\n'\""), r#"'a\tb\n\'"'"#);
    }
}
