//! The bytes of `--json` standard output, pinned in `tests/snapshots/demo_json.snap`: every
//! line of `openmanus demo --json` (the agent's events in order, then the result line), the
//! release binary's own scripted model, so the run is the same each time. Only the workspace's
//! path differs between runs and is replaced; everything else is compared byte for byte
//! (`UPDATE_SNAPSHOTS=1` rewrites the file when a change is meant).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use agent_testkit::snapshot::Snapshot;
use serde_json::Value;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

#[tokio::test]
async fn demo_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("demo");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(BIN)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .args(["demo", "--no-store", "--json", "--workspace"])
            .arg(&workspace)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the demo did not finish")
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let workspace = workspace.to_str().unwrap();
    let mut snapshot = Snapshot::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/demo_json.snap"
    ));
    for (index, line) in stdout.lines().enumerate() {
        let kind = serde_json::from_str::<Value>(line).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned();
        snapshot.case(
            format!("{:02} {kind}", index + 1),
            line.replace(workspace, "<workspace>"),
        );
    }
    snapshot.check();
}
