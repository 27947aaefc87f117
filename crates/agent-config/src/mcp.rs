//! `mcp.json`: the MCP servers Manus and MCPAgent connect to, in OpenManus's format (spec §6.3)
//! plus Claude-Desktop-style entries.
//!
//! ```json
//! { "mcpServers": {
//!     "files":  { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
//!     "remote": { "type": "sse", "url": "http://localhost:8000/sse" },
//!     "claude": { "command": "uvx", "args": ["mcp-server-time"], "env": { "TZ": "UTC" } },
//!     "http":   { "url": "http://localhost:9000/mcp" } } }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::env::{Env, expand};
use crate::error::{ConfigError, json_kind, without_value};

/// One MCP server of `mcp.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server id: its key under `mcpServers`. It becomes part of the tool names
    /// (`mcp_<id>_<tool>`).
    pub id: String,
    /// How to reach it.
    pub transport: McpTransport,
}

/// How to reach an MCP server. `Debug` shows environment variable and header *names* only,
/// since their values often hold tokens.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// `"type": "stdio"` (or no type and a `command`): a child process speaking MCP on its
    /// standard streams.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables for it.
        env: BTreeMap<String, String>,
        /// Its working directory; `None`: ours. A relative path is relative to the process's
        /// current directory.
        cwd: Option<PathBuf>,
    },
    /// `"type": "sse"`: the legacy HTTP + server-sent-events transport.
    Sse {
        /// The SSE endpoint, e.g. `http://localhost:8000/sse`.
        url: String,
        /// Extra HTTP headers (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
    /// `"type": "streamable_http"` (also `"http"`, `"streamable-http"`, `"streamableHttp"`, or
    /// no type and a `url`): the streamable HTTP transport.
    StreamableHttp {
        /// The endpoint, e.g. `http://localhost:9000/mcp`.
        url: String,
        /// Extra HTTP headers (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// `"stdio"`, `"sse"` or `"streamable_http"`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Sse { .. } => "sse",
            Self::StreamableHttp { .. } => "streamable_http",
        }
    }
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
            Self::StreamableHttp { url, headers } => f
                .debug_struct("StreamableHttp")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The fields an entry may have.
const FIELDS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "disabled",
];

/// `mcpServers` in file order (serde_json's own map would sort the ids).
#[derive(Default)]
struct OrderedServers(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for OrderedServers {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedServers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of MCP servers by id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<(String, Value)> = Vec::new();
                while let Some(id) = map.next_key::<String>()? {
                    // Checked before the value is read, so the error points at the key.
                    if entries.iter().any(|(seen, _)| *seen == id) {
                        return Err(serde::de::Error::custom(format!(
                            "duplicate MCP server id `{id}`"
                        )));
                    }
                    let value = map.next_value::<Value>()?;
                    entries.push((id, value));
                }
                Ok(OrderedServers(entries))
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[derive(Deserialize)]
struct McpFile {
    #[serde(rename = "mcpServers", default)]
    servers: OrderedServers,
}

/// Parses the text of an `mcp.json` (`path` is used in error messages only), reading `${VAR}`
/// references from the process environment.
///
/// # Errors
///
/// [`ConfigError::McpSyntax`] for invalid JSON or a wrong shape, [`ConfigError::McpServer`]
/// (naming the server and the field) for an unusable entry.
pub fn parse_mcp_servers(text: &str, path: &Path) -> Result<Vec<McpServerConfig>, ConfigError> {
    parse_with_env(text, path, &Env::process())
}

/// Reads an `mcp.json`; a missing file means no servers.
///
/// # Errors
///
/// [`ConfigError::Read`] when the file exists but cannot be read, otherwise as
/// [`parse_mcp_servers`].
pub fn load_mcp_servers(path: &Path) -> Result<Vec<McpServerConfig>, ConfigError> {
    load_with_env(path, &Env::process())
}

pub(crate) fn load_with_env(path: &Path, env: &Env) -> Result<Vec<McpServerConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_with_env(&text, path, env),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::debug!(path = %path.display(), "no MCP server file");
            Ok(Vec::new())
        }
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

pub(crate) fn parse_with_env(
    text: &str,
    path: &Path,
    env: &Env,
) -> Result<Vec<McpServerConfig>, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let file: McpFile = serde_json::from_str(text).map_err(|e| ConfigError::McpSyntax {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e),
    })?;
    let mut servers = Vec::with_capacity(file.servers.0.len());
    for (id, value) in file.servers.0 {
        let error = |field: Option<String>, message: String| ConfigError::McpServer {
            path: path.to_owned(),
            server: id.clone(),
            field,
            message,
        };
        let Value::Object(entry) = value else {
            return Err(error(
                None,
                format!("expected an object, found {}", json_kind(&value)),
            ));
        };
        match parse_entry(&entry, env) {
            Ok(Some(transport)) => servers.push(McpServerConfig { id, transport }),
            Ok(None) => tracing::info!(server = %id, "MCP server disabled in mcp.json"),
            Err((field, message)) => return Err(error(field, message)),
        }
    }
    Ok(servers)
}

/// serde_json's message without its own " at line L column C" suffix (we report those apart).
fn strip_position(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    without_value(full.strip_suffix(&suffix).unwrap_or(&full))
}

type EntryError = (Option<String>, String);

fn field_error(field: &str, message: impl Into<String>) -> EntryError {
    (Some(field.to_owned()), message.into())
}

fn string_field(
    entry: &Map<String, Value>,
    field: &'static str,
    env: &Env,
) -> Result<Option<String>, EntryError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => expand_str(s, field, env).map(Some),
        Some(other) => Err(field_error(
            field,
            format!("expected a string, found {}", json_kind(other)),
        )),
    }
}

fn expand_str(s: &str, field: &'static str, env: &Env) -> Result<String, EntryError> {
    match expand(s, env) {
        Ok(Some(expanded)) => Ok(expanded),
        Ok(None) => Ok(s.to_owned()),
        Err(e) => Err(field_error(field, e.to_string())),
    }
}

fn string_list(
    entry: &Map<String, Value>,
    field: &'static str,
    env: &Env,
) -> Result<Vec<String>, EntryError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => expand_str(s, field, env),
                other => Err(field_error(
                    field,
                    format!(
                        "expected an array of strings, found the element {}",
                        json_kind(other)
                    ),
                )),
            })
            .collect(),
        Some(other) => Err(field_error(
            field,
            format!("expected an array of strings, found {}", json_kind(other)),
        )),
    }
}

fn string_map(
    entry: &Map<String, Value>,
    field: &'static str,
    env: &Env,
) -> Result<BTreeMap<String, String>, EntryError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), expand_str(s, field, env)?)),
                other => Err(field_error(
                    field,
                    format!("`{k}`: expected a string value, found {}", json_kind(other)),
                )),
            })
            .collect(),
        Some(other) => Err(field_error(
            field,
            format!("expected an object of strings, found {}", json_kind(other)),
        )),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Sse,
    Http,
}

fn parse_kind(entry: &Map<String, Value>, env: &Env) -> Result<Kind, EntryError> {
    let has = |field: &str| entry.get(field).is_some_and(|v| !v.is_null());
    match string_field(entry, "type", env)? {
        Some(kind) => match kind.as_str() {
            "stdio" => Ok(Kind::Stdio),
            "sse" => Ok(Kind::Sse),
            "streamable_http" | "streamable-http" | "streamableHttp" | "http" => Ok(Kind::Http),
            other => Err(field_error(
                "type",
                format!(
                    "unknown transport `{other}`; expected `stdio`, `sse` or `streamable_http` \
                     (also `http`)"
                ),
            )),
        },
        // Claude-Desktop style: the fields say which transport.
        None => match (has("command"), has("url")) {
            (true, false) => Ok(Kind::Stdio),
            (false, true) => Ok(Kind::Http),
            (true, true) => Err((
                None,
                "has both `command` and `url`; set `type` to `stdio`, `sse` or \
                 `streamable_http`"
                    .into(),
            )),
            (false, false) => Err((
                None,
                "needs a `command` (a stdio server) or a `url` (an HTTP server)".into(),
            )),
        },
    }
}

/// `Ok(None)`: the entry is disabled.
fn parse_entry(entry: &Map<String, Value>, env: &Env) -> Result<Option<McpTransport>, EntryError> {
    for key in entry.keys() {
        if !FIELDS.contains(&key.as_str()) {
            return Err((
                Some(key.clone()),
                format!(
                    "unknown field; expected one of {}",
                    FIELDS
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    match entry.get("disabled") {
        None | Some(Value::Null | Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return Ok(None),
        Some(other) => {
            return Err(field_error(
                "disabled",
                format!("expected true or false, found {}", json_kind(other)),
            ));
        }
    }
    let kind = parse_kind(entry, env)?;
    let present = |field: &str| entry.get(field).is_some_and(|v| !v.is_null());
    let unused = |fields: &[&str], kind: &str| {
        for field in fields {
            if present(field) {
                tracing::warn!(
                    field,
                    "`{field}` is not used by a {kind} MCP server; ignored"
                );
            }
        }
    };
    Ok(Some(match kind {
        Kind::Stdio => {
            unused(&["url", "headers"], "stdio");
            let command = string_field(entry, "command", env)?
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| field_error("command", "a stdio server needs a command"))?;
            McpTransport::Stdio {
                command,
                args: string_list(entry, "args", env)?,
                env: string_map(entry, "env", env)?,
                cwd: string_field(entry, "cwd", env)?
                    .filter(|c| !c.is_empty())
                    .map(PathBuf::from),
            }
        }
        Kind::Sse | Kind::Http => {
            let name = if kind == Kind::Sse { "sse" } else { "HTTP" };
            unused(&["command", "args", "env", "cwd"], name);
            let url = string_field(entry, "url", env)?
                .ok_or_else(|| field_error("url", format!("an {name} server needs a url")))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(field_error(
                    "url",
                    "expected an http:// or https:// URL".to_owned(),
                ));
            }
            let headers = string_map(entry, "headers", env)?;
            if kind == Kind::Sse {
                McpTransport::Sse { url, headers }
            } else {
                McpTransport::StreamableHttp { url, headers }
            }
        }
    }))
}
