//! [`ConfigError`]: every way loading a configuration can fail, each naming the file and, where
//! there is one, the line, column and key.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::source::ConfigOrigin;

/// A configuration that cannot be used. Every variant names the file; errors about a value also
/// give its line and column (1-based, columns in characters) and its dotted key path
/// (`llm.vision.max_tokens`), so a message reads like a compiler's:
///
/// ```text
/// config/config.toml:12:14: `llm.vision.max_tokens`: invalid type: a string, expected u32
/// ```
///
/// A message never repeats the offending value (a key put under the wrong name would be
/// echoed to the terminal and the logs): it says what kind of value was found, and the line and
/// column point at it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No configuration file exists at any of the default places.
    #[error(
        "no configuration file found; searched {}. Run `openmanus config init` to write one \
         (in the per-user configuration directory), or pass --config <file>",
        list_paths(.searched)
    )]
    NotFound {
        /// Every path looked at, in lookup order.
        searched: Vec<PathBuf>,
    },
    /// The file named by `--config` or `OPENMANUS_CONFIG` does not exist.
    #[error("configuration file {} (named by {origin}) does not exist", .path.display())]
    Missing {
        /// The path that was named.
        path: PathBuf,
        /// Who named it.
        origin: ConfigOrigin,
    },
    /// The file exists but cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}:{line}:{column}: invalid TOML: {message}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// A key is unknown, or its value has the wrong type or an unsupported value.
    #[error("{}:{line}:{column}: `{key}`: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The dotted key path, e.g. `llm.vision.max_tokens`.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// A required key is missing from a section (`model` and `base_url` in `[llm]`).
    #[error("{}{}: the required key `{key}` is missing from [{section}]", .path.display(), at_line(*.line))]
    MissingKey {
        /// The file.
        path: PathBuf,
        /// The line of the section header, when the section exists.
        line: Option<usize>,
        /// The section, e.g. `llm`.
        section: String,
        /// The missing key.
        key: String,
    },
    /// A value `"${NAME}"` names an environment variable that is not set (and gives no default).
    #[error(
        "{}:{line}:{column}: `{key}` reads the environment variable `{var}`, which is not set",
        .path.display()
    )]
    EnvVar {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The dotted key path.
        key: String,
        /// The variable.
        var: String,
    },
    /// A command-line override (`-c KEY=VALUE`, `--model`) names an unknown key, has a value
    /// of the wrong type, or cannot be placed in the file.
    #[error("{text}: {message}")]
    Override {
        /// The override as written (`-c llm.temperature=hot`).
        text: String,
        /// What is wrong with it.
        message: String,
    },
    /// `mcp.json` is not valid JSON or not shaped like `{"mcpServers": {...}}`.
    #[error("{}:{line}:{column}: invalid MCP server file: {message}", .path.display())]
    McpSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// One entry of `mcp.json` is unusable.
    #[error("{}: MCP server `{server}`{}: {message}", .path.display(), field_suffix(.field.as_deref()))]
    McpServer {
        /// The file.
        path: PathBuf,
        /// The server id (the key under `mcpServers`).
        server: String,
        /// The field at fault, when one is.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
}

fn list_paths(paths: &[PathBuf]) -> String {
    let mut out = String::new();
    for (i, path) in paths.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}", path.display());
    }
    out
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

fn field_suffix(field: Option<&str>) -> String {
    field.map(|f| format!(", field `{f}`")).unwrap_or_default()
}

/// A deserializer's message with the offending value left out: serde's `invalid type: string
/// "sk-...", expected u32` becomes `invalid type: a string, expected u32` (and the same for
/// `invalid value:` and `invalid length:`), and `unknown variant \`...\`` becomes `unknown
/// variant`. Other messages (an unknown field names a key, not a value) are kept.
pub(crate) fn without_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // serde writes `<unexpected>, expected <what>`; the unexpected part may itself hold
            // ", expected" inside a quoted string, so the last occurrence is the separator.
            if let Some(at) = rest.rfind(", expected ") {
                let (found, expected) = rest.split_at(at);
                return format!("{prefix}{}{expected}", value_kind(found));
            }
            return format!("{prefix}a value of the wrong kind");
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        // `unknown variant `<value>`, expected one of ...`: the list of variants is kept.
        if let Some(at) = rest.rfind("`, expected") {
            return format!("unknown variant{}", rest.get(at + 1..).unwrap_or_default());
        }
        return "unknown variant".to_owned();
    }
    message.to_owned()
}

/// What serde's `Unexpected` text (`string "x"`, `integer \`3\``, `map`, ...) names, without the
/// value.
fn value_kind(found: &str) -> &'static str {
    let word = |w: &str| found == w || found.starts_with(&format!("{w} "));
    if word("string") {
        "a string"
    } else if word("integer") {
        "an integer"
    } else if word("floating") {
        "a floating point number"
    } else if word("boolean") {
        "a boolean"
    } else if word("character") {
        "a character"
    } else if word("byte") {
        "bytes"
    } else if found.starts_with("map") || found.starts_with("table") {
        "a table"
    } else if found.starts_with("sequence") || found.starts_with("array") {
        "an array"
    } else if found.starts_with("unit") || found.starts_with("null") {
        "nothing"
    } else {
        "a value of another kind"
    }
}

/// The kind of a JSON value, for messages that must not repeat the value itself.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// 1-based (line, column) of a byte offset in `text`; the column counts characters.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

impl ConfigError {
    /// The file the error is about (`None` for [`ConfigError::NotFound`], which is about several,
    /// and for [`ConfigError::Override`], which is about the command line).
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::NotFound { .. } | Self::Override { .. } => None,
            Self::Missing { path, .. }
            | Self::Read { path, .. }
            | Self::Syntax { path, .. }
            | Self::Invalid { path, .. }
            | Self::MissingKey { path, .. }
            | Self::EnvVar { path, .. }
            | Self::McpSyntax { path, .. }
            | Self::McpServer { path, .. } => Some(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 4), (1, 5));
        assert_eq!(line_col(text, 6), (2, 1));
        // `=` after the two-byte `é`: byte 10, character column 4.
        assert_eq!(line_col(text, 10), (2, 4));
        // Inside a multi-byte character and past the end stay in bounds.
        assert_eq!(line_col(text, 8), (2, 2));
        assert_eq!(line_col(text, 999), (3, 1));
    }

    #[test]
    fn messages_never_repeat_the_value() {
        let secret = "sk-live-0123456789";
        let cases = [
            (
                format!("invalid type: string \"{secret}\", expected u32"),
                "invalid type: a string, expected u32",
            ),
            (
                format!("invalid type: string \"{secret}, expected x\", expected a boolean"),
                "invalid type: a string, expected a boolean",
            ),
            (
                "invalid value: integer `-1`, expected u64".to_owned(),
                "invalid value: an integer, expected u64",
            ),
            (
                "invalid type: floating point `1.5`, expected u32".to_owned(),
                "invalid type: a floating point number, expected u32",
            ),
            (
                "invalid type: map, expected a string".to_owned(),
                "invalid type: a table, expected a string",
            ),
            (
                format!("unknown variant `{secret}`, expected one of `openai`, `azure`"),
                "unknown variant, expected one of `openai`, `azure`",
            ),
            (
                "unknown field `max_token`, expected one of `model`".to_owned(),
                "unknown field `max_token`, expected one of `model`",
            ),
        ];
        for (message, expected) in cases {
            let redacted = without_value(&message);
            assert_eq!(redacted, expected);
            assert!(!redacted.contains(secret));
        }
    }
}
