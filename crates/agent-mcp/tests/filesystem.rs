//! The client against the real third-party `@modelcontextprotocol/server-filesystem` (stdio).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_mcp::{McpClientOptions, McpClients};
use agent_tools::Tool;
use common::*;
use serde_json::json;

fn tool(clients: &McpClients, name: &str) -> std::sync::Arc<dyn Tool> {
    clients
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn filesystem_server_lists_reads_and_refuses_paths_outside_its_root() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("hello.txt"), "first line\nsecond line\n").unwrap();
    std::fs::create_dir(root_path.join("sub")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "do not read").unwrap();

    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("pid");
    let config = bash_with_pid(
        "fs",
        &pidfile,
        &format!(
            "exec '{}' '{}'",
            filesystem_bin().display(),
            root_path.display()
        ),
    );
    let (mut clients, warnings) =
        McpClients::connect_all(&[config], McpClientOptions::default()).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let pid = read_pid(&pidfile);

    let names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    for expected in [
        "mcp_fs_read_file",
        "mcp_fs_read_text_file",
        "mcp_fs_list_directory",
        "mcp_fs_write_file",
        "mcp_fs_list_allowed_directories",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    let original: Vec<String> = clients
        .mcp_tools()
        .iter()
        .map(|t| t.original_name().to_owned())
        .collect();
    assert!(
        original.contains(&"read_text_file".to_owned()),
        "{original:?}"
    );

    // Schemas as the server declares them (zod → JSON schema).
    let read = tool(&clients, "mcp_fs_read_text_file");
    let schema = read.parameters();
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["path"]["type"], "string", "{schema}");
    assert_eq!(schema["properties"]["head"]["type"], "number", "{schema}");
    assert_eq!(schema["required"], json!(["path"]), "{schema}");
    assert!(
        read.description()
            .starts_with("Read the complete contents of a file")
    );
    let list = tool(&clients, "mcp_fs_list_directory");
    assert_eq!(list.parameters()["properties"]["path"]["type"], "string");

    // Rendered observations.
    let hello = root_path.join("hello.txt");
    let r = tool(&clients, "mcp_fs_read_file")
        .execute(json!({"path": hello.to_str().unwrap()}), &ctx())
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.output.as_deref(), Some("first line\nsecond line\n"));
    let r = read
        .execute(json!({"path": hello.to_str().unwrap(), "head": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("first line"), "{r:?}");
    let r = list
        .execute(json!({"path": root_path.to_str().unwrap()}), &ctx())
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    let listing = r.output.unwrap();
    let mut lines: Vec<&str> = listing.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["[DIR] sub", "[FILE] hello.txt"], "{listing}");

    // A path outside the allowed directory: an error result naming the refusal.
    let r = read
        .execute(json!({"path": secret.to_str().unwrap()}), &ctx())
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    let error = r.error.as_deref().unwrap();
    assert!(
        error.contains("Access denied") && error.contains("outside allowed directories"),
        "{error}"
    );
    assert!(!error.contains("do not read"));

    clients.disconnect_all().await;
    assert_gone(pid, "server-filesystem").await;
}
