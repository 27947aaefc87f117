//! Repair of near-JSON: what models write when they mean JSON.
//!
//! [`repair_json`] first tries the text as it is; only when that fails does it rewrite it, one
//! pass, outside and inside strings:
//!
//! | written | read as |
//! |---|---|
//! | a trailing comma before `}` or `]` (`{"a": 1,}`) | dropped |
//! | single-quoted strings (`{'a': 'it\'s'}`) | double-quoted, inner `"` escaped, `\'` unescaped |
//! | a raw newline, carriage return, tab or other control character inside a string | `\n`, `\r`, `\t`, `\u00XX` |
//! | an unknown escape inside a string (`"C:\dir"`) | a literal backslash (`"C:\\dir"`) |
//! | Python's `True`, `False`, `None` outside strings | `true`, `false`, `null` |
//! | an unquoted key (`{name: "x"}`) | a quoted key |
//!
//! Anything else (an unterminated string, unbalanced brackets, two values in a row) stays an
//! error: guessing further would turn a broken call into a wrong one.

use serde_json::Value;

/// Parses `text` as JSON, repairing near-JSON as the module documents.
///
/// # Errors
///
/// The parser's message for the repaired text, when even that is not JSON.
pub fn repair_json(text: &str) -> Result<Value, String> {
    let text = text.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let repaired = rewrite(text)?;
    serde_json::from_str(&repaired).map_err(|e| e.to_string())
}

/// The one rewriting pass.
fn rewrite(text: &str) -> Result<String, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                i = string(&chars, i, &mut out)?;
                continue;
            }
            '}' | ']' => {
                let trimmed = out.trim_end().len();
                out.truncate(trimmed);
                if out.ends_with(',') {
                    out.pop();
                }
                out.push(c);
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next].is_whitespace() {
                    next += 1;
                }
                let is_key = chars.get(next) == Some(&':');
                match word.as_str() {
                    _ if is_key => {
                        out.push('"');
                        out.push_str(&word);
                        out.push('"');
                    }
                    "True" => out.push_str("true"),
                    "False" => out.push_str("false"),
                    "None" => out.push_str("null"),
                    _ => out.push_str(&word),
                }
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Copies the string starting at `chars[start]` (a `"` or `'`) to `out` as a JSON string;
/// returns the index after its closing quote.
fn string(chars: &[char], start: usize, out: &mut String) -> Result<usize, String> {
    let quote = chars[start];
    out.push('"');
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err("the text ends inside a string".to_owned());
                };
                match next {
                    '\'' if quote == '\'' => out.push('\''),
                    '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => {
                        out.push('\\');
                        out.push(next);
                    }
                    'u' if chars.len() > i + 5
                        && chars[i + 2..i + 6].iter().all(char::is_ascii_hexdigit) =>
                    {
                        out.push('\\');
                        out.push('u');
                    }
                    _ => {
                        // Not an escape JSON knows: the backslash was meant literally.
                        out.push_str("\\\\");
                        i += 1;
                        continue;
                    }
                }
                i += 2;
                continue;
            }
            c if c == quote => {
                out.push('"');
                return Ok(i + 1);
            }
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
        i += 1;
    }
    Err("the text ends inside a string".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documented_repairs() {
        let cases = [
            (r#"{"a": 1, "b": [1, 2,],}"#, json!({"a": 1, "b": [1, 2]})),
            (
                r#"{'path': 'it\'s here', 'q': 'say \"hi\"'}"#,
                json!({"path": "it's here", "q": "say \"hi\""}),
            ),
            (
                "{'q': 'a \"quoted\" word'}",
                json!({"q": "a \"quoted\" word"}),
            ),
            (
                "{\"code\": \"print(1)\nprint(2)\t# x\"}",
                json!({"code": "print(1)\nprint(2)\t# x"}),
            ),
            (r#"{"path": "C:\dir\new"}"#, json!({"path": "C:\\dir\new"})),
            (
                "{'a': True, 'b': False, 'c': None, 'd': true}",
                json!({"a": true, "b": false, "c": null, "d": true}),
            ),
            (
                r#"{name: "bash", arguments: {command: "ls"}}"#,
                json!({"name": "bash", "arguments": {"command": "ls"}}),
            ),
            (r#"{"s": "\u00e9"}"#, json!({"s": "é"})),
            ("{'s': 'True, None'}", json!({"s": "True, None"})),
        ];
        for (text, want) in cases {
            assert_eq!(repair_json(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn what_is_not_near_json_stays_an_error() {
        for text in [
            r#"{"a": "unterminated"#,
            r#"{"a": 1"#,
            "",
            "{} {}",
            r#"{'a': 'x\"}"#,
        ] {
            assert!(repair_json(text).is_err(), "{text}");
        }
    }
}
