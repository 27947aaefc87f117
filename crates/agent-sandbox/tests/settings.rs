//! `agent_sandbox::from_settings`: the `[sandbox]` section of a real configuration file to a
//! running bubblewrap sandbox (the workspace created, canonicalised, mirrored or at `work_dir`),
//! and the settings it refuses.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agent_config::Config;
use agent_sandbox::{SandboxError, SandboxFeatures};

const T: Option<Duration> = Some(Duration::from_secs(30));

fn config(sandbox: &str) -> Config {
    Config::from_toml_str(&format!(
        "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[sandbox]\n{sandbox}"
    ))
    .unwrap()
}

#[tokio::test]
async fn the_local_backend_runs_over_a_workspace_it_creates_at_work_dir() {
    let dir = tempfile::tempdir().unwrap();
    // A path with a `..` on the way and a directory that does not exist yet.
    let workspace = dir.path().join("sub/../ws");
    let config = config("use_sandbox = true\nwork_dir = \"/work\"\n");
    let sandbox =
        agent_sandbox::from_settings(&config.sandbox, &workspace, SandboxFeatures::default())
            .await
            .unwrap();
    let canonical = dir.path().canonicalize().unwrap().join("ws");
    assert_eq!(sandbox.workspace(), canonical);
    assert_eq!(sandbox.work_dir(), std::path::Path::new("/work"));
    let out = sandbox.run("pwd; echo hi > made.txt", T).await.unwrap();
    assert_eq!((out.stdout.as_str(), out.exit_code), ("/work\n", Some(0)));
    assert_eq!(
        std::fs::read_to_string(canonical.join("made.txt")).unwrap(),
        "hi\n"
    );
    sandbox.cleanup().await.unwrap();
}

#[tokio::test]
async fn mirrored_shows_the_workspace_at_its_own_path() {
    let dir = tempfile::tempdir().unwrap();
    let config = config("backend = \"local\"\n");
    let sandbox =
        agent_sandbox::from_settings(&config.sandbox, dir.path(), SandboxFeatures::MIRRORED)
            .await
            .unwrap();
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(sandbox.work_dir(), canonical);
    let out = sandbox.run("pwd", T).await.unwrap();
    assert_eq!(out.stdout.trim_end(), canonical.to_str().unwrap());
    sandbox.cleanup().await.unwrap();
}

#[tokio::test]
async fn unusable_settings_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (section, word) in [
        ("cpu_limit = 0.0\n", "cpu_limit"),
        ("memory_limit = \"lots\"\n", "lots"),
        ("timeout = 0\n", "timeout"),
    ] {
        let config = config(section);
        match agent_sandbox::from_settings(&config.sandbox, dir.path(), SandboxFeatures::default())
            .await
        {
            Err(SandboxError::InvalidSetting(message)) => {
                assert!(message.contains(word), "{section}: {message}");
            }
            Err(other) => panic!("{section}: expected InvalidSetting, got {other}"),
            Ok(_) => panic!("{section}: the sandbox started"),
        }
    }
}

#[tokio::test]
async fn a_workspace_that_cannot_be_created_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let config = config("");
    match agent_sandbox::from_settings(
        &config.sandbox,
        &file.join("ws"),
        SandboxFeatures::default(),
    )
    .await
    {
        Err(SandboxError::Io { context, .. }) => {
            assert!(context.contains("cannot create the workspace"), "{context}");
        }
        Err(other) => panic!("expected an I/O error, got {other}"),
        Ok(_) => panic!("the sandbox started"),
    }
}

/// A build without the `docker` feature refuses the Docker backend with an error that names
/// the feature, and the local backend still works.
#[cfg(not(feature = "docker"))]
#[tokio::test]
async fn without_the_docker_feature_the_docker_backend_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = config("use_sandbox = true\nbackend = \"docker\"\nimage = \"busybox\"\n");
    let error =
        agent_sandbox::from_settings(&config.sandbox, dir.path(), SandboxFeatures::MIRRORED)
            .await
            .err()
            .expect("the Docker backend is refused");
    let SandboxError::Unavailable(message) = &error else {
        panic!("not Unavailable: {error:?}");
    };
    assert!(message.contains("`docker` cargo feature"), "{message}");
}
