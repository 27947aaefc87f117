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
/// config/config.toml:12:14: `llm.vision.max_tokens`: invalid type: string "lots", expected u32
/// ```
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
}
