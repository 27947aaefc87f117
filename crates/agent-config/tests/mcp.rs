//! `mcp.json`: OpenManus entries, Claude-Desktop entries, our additions, and bad entries.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_config::{ConfigError, McpTransport, load_mcp_servers, parse_mcp_servers};

fn parse(text: &str) -> Result<Vec<agent_config::McpServerConfig>, ConfigError> {
    parse_mcp_servers(text, Path::new("config/mcp.json"))
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn openmanus_entries() {
    let servers = parse(
        r#"{ "mcpServers": {
            "server1": { "type": "sse", "url": "http://localhost:8000/sse" },
            "shell": { "type": "stdio", "command": "python", "args": ["-m", "app.mcp.server"] }
        } }"#,
    )
    .unwrap();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].id, "server1");
    assert_eq!(
        servers[0].transport,
        McpTransport::Sse {
            url: "http://localhost:8000/sse".into(),
            headers: BTreeMap::new()
        }
    );
    assert_eq!(servers[0].transport.kind(), "sse");
    assert_eq!(servers[1].id, "shell");
    assert_eq!(
        servers[1].transport,
        McpTransport::Stdio {
            command: "python".into(),
            args: vec!["-m".into(), "app.mcp.server".into()],
            env: BTreeMap::new(),
            cwd: None,
        }
    );
}

#[test]
fn claude_desktop_entries_have_no_type() {
    let servers = parse(
        r#"{ "globalShortcut": "Ctrl+Space",
             "mcpServers": {
               "time": { "command": "uvx", "args": ["mcp-server-time"], "env": { "TZ": "UTC" } },
               "remote": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer t" } }
             } }"#,
    )
    .unwrap();
    assert_eq!(servers[0].transport.kind(), "stdio");
    match &servers[0].transport {
        McpTransport::Stdio { command, env, .. } => {
            assert_eq!(command, "uvx");
            assert_eq!(env.get("TZ").map(String::as_str), Some("UTC"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        servers[1].transport,
        McpTransport::StreamableHttp {
            url: "https://mcp.example.com/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer t".into())]),
        }
    );
    // Debug shows header and env names, not values.
    let debug = format!("{servers:?}");
    assert!(
        debug.contains("Authorization") && !debug.contains("Bearer t"),
        "{debug}"
    );
    assert!(debug.contains("TZ") && !debug.contains("UTC"), "{debug}");
}

#[test]
fn our_additions_streamable_http_cwd_env_and_disabled() {
    let servers = parse(
        r#"{ "mcpServers": {
            "z-first": { "type": "streamable_http", "url": "http://127.0.0.1:9000/mcp" },
            "a-second": { "type": "http", "url": "http://127.0.0.1:9001/mcp" },
            "dashed": { "type": "streamable-http", "url": "http://127.0.0.1:9002/mcp" },
            "camel": { "type": "streamableHttp", "url": "http://127.0.0.1:9003/mcp" },
            "tool": { "type": "stdio", "command": "node", "args": ["srv.js"], "cwd": "/opt/srv", "env": {"A": "1"} },
            "off": { "command": "never-started", "disabled": true }
        } }"#,
    )
    .unwrap();
    // File order is kept (tool names and connection order follow it); disabled entries are left
    // out.
    assert_eq!(
        servers.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["z-first", "a-second", "dashed", "camel", "tool"]
    );
    for server in &servers[..4] {
        assert_eq!(server.transport.kind(), "streamable_http");
    }
    match &servers[4].transport {
        McpTransport::Stdio { cwd, env, args, .. } => {
            assert_eq!(cwd.as_deref(), Some(PathBuf::from("/opt/srv").as_path()));
            assert_eq!(env.len(), 1);
            assert_eq!(args, &["srv.js"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn leftover_fields_of_the_other_transport_are_ignored_when_type_is_set() {
    // OpenManus accepts these; so do we (with a warning in the log).
    let servers =
        parse(r#"{ "mcpServers": { "s": { "type": "sse", "url": "http://h/sse", "args": [] } } }"#)
            .unwrap();
    assert_eq!(servers[0].transport.kind(), "sse");
}

#[test]
fn environment_references_are_expanded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    common::write(
        dir.path(),
        "config/config.toml",
        "[llm]\nmodel = \"m\"\nbase_url = \"u\"\n",
    );
    common::write(
        dir.path(),
        "config/mcp.json",
        r#"{ "mcpServers": { "gh": { "command": "gh-mcp", "env": { "GITHUB_TOKEN": "${GH_TOKEN}" } },
                             "web": { "url": "${MCP_URL:-http://127.0.0.1:7000/mcp}" } } }"#,
    );
    let config = agent_config::ConfigLoader::new(dir.path())
        .with_env(common::env_of(&[("GH_TOKEN", "ghp_123")]))
        .load()
        .unwrap();
    match &config.mcp.server("gh").unwrap().transport {
        McpTransport::Stdio { env, .. } => assert_eq!(env["GITHUB_TOKEN"], "ghp_123"),
        other => panic!("{other:?}"),
    }
    match &config.mcp.server("web").unwrap().transport {
        McpTransport::StreamableHttp { url, .. } => assert_eq!(url, "http://127.0.0.1:7000/mcp"),
        other => panic!("{other:?}"),
    }

    let err = agent_config::ConfigLoader::new(dir.path())
        .with_env(common::env_of(&[]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: MCP server `gh`, field `env`: reads the environment variable `GH_TOKEN`, which \
             is not set",
            path.join("mcp.json").display()
        )
    );
}

#[test]
fn bad_entries_name_the_server_and_the_field() {
    assert_eq!(
        err(r#"{"mcpServers": {"a": {"type": "stdio"}}}"#),
        "config/mcp.json: MCP server `a`, field `command`: a stdio server needs a command"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"a": {"type": "stdio", "command": "  "}}}"#),
        "config/mcp.json: MCP server `a`, field `command`: a stdio server needs a command"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"b": {"type": "sse"}}}"#),
        "config/mcp.json: MCP server `b`, field `url`: an sse server needs a url"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"c": {"type": "websocket", "url": "ws://x"}}}"#),
        "config/mcp.json: MCP server `c`, field `type`: unknown transport `websocket`; expected \
         `stdio`, `sse` or `streamable_http` (also `http`)"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"d": {"comand": "x"}}}"#),
        "config/mcp.json: MCP server `d`, field `comand`: unknown field; expected one of `type`, \
         `command`, `args`, `env`, `cwd`, `url`, `headers`, `disabled`"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"e": {"command": "x", "args": "-v"}}}"#),
        "config/mcp.json: MCP server `e`, field `args`: expected an array of strings, found a string"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"f": {"command": "x", "args": ["-v", 2]}}}"#),
        "config/mcp.json: MCP server `f`, field `args`: expected an array of strings, found the \
         element a number"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"g": {"command": "x", "env": {"A": 1}}}}"#),
        "config/mcp.json: MCP server `g`, field `env`: `A`: expected a string value, found a number"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"h": {"command": "x", "url": "http://y"}}}"#),
        "config/mcp.json: MCP server `h`: has both `command` and `url`; set `type` to `stdio`, \
         `sse` or `streamable_http`"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"i": {}}}"#),
        "config/mcp.json: MCP server `i`: needs a `command` (a stdio server) or a `url` (an HTTP \
         server)"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"j": {"type": "sse", "url": "localhost:8000/sse"}}}"#),
        "config/mcp.json: MCP server `j`, field `url`: expected an http:// or https:// URL"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"k": "npx server"}}"#),
        "config/mcp.json: MCP server `k`: expected an object, found a string"
    );
    assert_eq!(
        err(r#"{"mcpServers": {"l": {"command": "x", "disabled": "yes"}}}"#),
        "config/mcp.json: MCP server `l`, field `disabled`: expected true or false, found a string"
    );
    match parse(r#"{"mcpServers": {"m": {"type": 1}}}"#).unwrap_err() {
        ConfigError::McpServer { server, field, .. } => {
            assert_eq!((server.as_str(), field.as_deref()), ("m", Some("type")));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_files_give_line_and_column() {
    assert_eq!(
        err("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",}\n}}"),
        "config/mcp.json:2:24: invalid MCP server file: trailing comma"
    );
    assert_eq!(
        err(r#"{"mcpServers": [1]}"#),
        "config/mcp.json:1:15: invalid MCP server file: invalid type: an array, expected an \
         object of MCP servers by id"
    );
    let duplicate =
        err("{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}\n}}");
    assert!(
        duplicate.starts_with("config/mcp.json:3:3:")
            && duplicate.ends_with("invalid MCP server file: duplicate MCP server id `a`"),
        "{duplicate}"
    );
}

#[test]
fn empty_and_missing_files_mean_no_servers() {
    assert!(parse("").unwrap().is_empty());
    assert!(parse("  \n").unwrap().is_empty());
    assert!(parse("{}").unwrap().is_empty());
    assert!(parse(r#"{"mcpServers": {}}"#).unwrap().is_empty());
    let dir = tempfile::tempdir().unwrap();
    assert!(
        load_mcp_servers(&dir.path().join("mcp.json"))
            .unwrap()
            .is_empty()
    );
}
