//! The MCP servers an editor gives `session/new` and `session/load`, as the agent's MCP server
//! settings: `{name, command, args, env: [{name, value}]}` (stdio), `{type: "http", name, url,
//! headers: [{name, value}]}` and `{type: "sse", …}`. Manus connects them beside the servers of
//! `mcp.json`.

use std::collections::BTreeMap;

use agent_config::{McpServerConfig, McpTransport};
use serde_json::Value;

use crate::rpc::RpcError;

/// `[{name, value}]` as a map.
fn pairs(value: &Value, field: &str, server: &str) -> Result<BTreeMap<String, String>, RpcError> {
    let mut map = BTreeMap::new();
    let Some(list) = value.get(field) else {
        return Ok(map);
    };
    let list = list.as_array().ok_or_else(|| {
        RpcError::invalid_params(format!("MCP server {server}: {field} is a list"))
    })?;
    for pair in list {
        match (pair["name"].as_str(), pair["value"].as_str()) {
            (Some(name), Some(value)) => {
                map.insert(name.to_owned(), value.to_owned());
            }
            _ => {
                return Err(RpcError::invalid_params(format!(
                    "MCP server {server}: each of {field} has a name and a value"
                )));
            }
        }
    }
    Ok(map)
}

/// The editor's servers as settings.
///
/// # Errors
///
/// A server without a name, a command or a URL, or of a type this agent does not know.
pub fn servers(list: &[Value]) -> Result<Vec<McpServerConfig>, RpcError> {
    list.iter().map(server).collect()
}

fn server(value: &Value) -> Result<McpServerConfig, RpcError> {
    let name = value["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| RpcError::invalid_params("an MCP server needs a name"))?;
    let url = || {
        value["url"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| RpcError::invalid_params(format!("MCP server {name} needs a url")))
    };
    let transport = match value["type"].as_str() {
        None | Some("stdio") => McpTransport::Stdio {
            command: value["command"]
                .as_str()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("MCP server {name} needs a command"))
                })?
                .to_owned(),
            args: value["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            env: pairs(value, "env", name)?,
            cwd: None,
        },
        Some("http") => McpTransport::StreamableHttp {
            url: url()?,
            headers: pairs(value, "headers", name)?,
        },
        Some("sse") => McpTransport::Sse {
            url: url()?,
            headers: pairs(value, "headers", name)?,
        },
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "MCP server {name}: unknown type {other:?} (stdio, http or sse)"
            )));
        }
    };
    Ok(McpServerConfig {
        id: name.to_owned(),
        transport,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_three_kinds_become_settings_and_bad_ones_are_refused() {
        let list = [
            json!({"name": "files", "command": "/bin/mcp", "args": ["-v"], "env": [{"name": "A", "value": "1"}]}),
            json!({"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]}),
            json!({"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}),
        ];
        let servers = servers(&list).unwrap();
        assert_eq!(servers[0].id, "files");
        assert!(
            matches!(&servers[0].transport, McpTransport::Stdio { command, args, env, .. }
            if command == "/bin/mcp" && args == &["-v"] && env["A"] == "1")
        );
        assert!(
            matches!(&servers[1].transport, McpTransport::StreamableHttp { headers, .. }
            if headers["X"] == "y")
        );
        assert!(matches!(&servers[2].transport, McpTransport::Sse { .. }));
        for bad in [
            json!({"command": "/bin/x"}),
            json!({"name": "a"}),
            json!({"type": "http", "name": "a"}),
            json!({"type": "websocket", "name": "a", "url": "ws://x"}),
            json!({"name": "a", "command": "x", "env": [{"name": "A"}]}),
        ] {
            assert!(super::servers(std::slice::from_ref(&bad)).is_err(), "{bad}");
        }
    }
}
