//! Withheld environment variables (issue 21: secrets stay with the client), alone in its test
//! binary: the set is process-wide.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use agent_process::{ProcessGroup, Spawned, withheld_env, withhold_env};
use tokio::io::AsyncReadExt;

async fn child_env(command: &mut tokio::process::Command) -> String {
    command.stdout(std::process::Stdio::piped());
    let Spawned { group, stdout, .. } = ProcessGroup::spawn("env", command).unwrap();
    let mut out = String::new();
    stdout.unwrap().read_to_string(&mut out).await.unwrap();
    group.wait().await;
    out
}

#[tokio::test]
async fn withheld_variables_do_not_reach_children_unless_set_explicitly() {
    // HOME is inherited by every child of this test; KEPT is set on the command itself.
    assert!(
        std::env::var_os("HOME").is_some(),
        "the test needs HOME set"
    );
    let before = child_env(&mut tokio::process::Command::new("env")).await;
    assert!(before.lines().any(|l| l.starts_with("HOME=")), "{before}");

    withhold_env(["HOME", "KEPT"]);
    assert_eq!(withheld_env(), ["HOME", "KEPT"]);
    let mut command = tokio::process::Command::new("env");
    command.env("KEPT", "given on purpose");
    let env = child_env(&mut command).await;
    assert!(
        !env.lines().any(|l| l.starts_with("HOME=")),
        "a withheld variable reached the child:\n{env}"
    );
    assert!(env.lines().any(|l| l == "KEPT=given on purpose"), "{env}");
    assert!(
        env.lines().any(|l| l.starts_with("PATH=")),
        "the rest is inherited: {env}"
    );
}
