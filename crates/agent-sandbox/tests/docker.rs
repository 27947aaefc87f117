//! The Docker backend against a real Docker engine. These tests are ignored in a plain
//! `cargo test`; `cargo xtask ci` runs them (`--ignored`) when an engine answers, with the image
//! it imports from the host's static busybox (`OPENMANUS_DOCKER_IMAGE`), and says plainly that
//! they were skipped otherwise. The unreachable-engine test always runs.

#![cfg(feature = "docker")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_sandbox::tools::SandboxShell;
use agent_sandbox::{DockerSandbox, DockerSandboxOptions, Sandbox, SandboxError};
use agent_tools::{Tool, ToolContext};
use serde_json::{Value, json};

fn image() -> String {
    std::env::var("OPENMANUS_DOCKER_IMAGE")
        .expect("OPENMANUS_DOCKER_IMAGE names the test image (cargo xtask ci sets it)")
}

async fn sandbox(dir: &std::path::Path, network: bool) -> DockerSandbox {
    DockerSandbox::new(DockerSandboxOptions {
        image: image(),
        shell: "sh".to_owned(),
        network_enabled: network,
        timeout: Duration::from_secs(30),
        ..DockerSandboxOptions::new(dir)
    })
    .await
    .expect("the Docker sandbox starts")
}

#[tokio::test]
async fn an_unreachable_engine_is_a_plain_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = DockerSandbox::new(DockerSandboxOptions {
        docker_host: Some("unix:///nonexistent/docker.sock".to_owned()),
        ..DockerSandboxOptions::new(dir.path())
    })
    .await
    .unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("unix:///nonexistent/docker.sock"), "{text}");
    assert!(text.contains("backend = \"local\""), "{text}");
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn commands_files_limits_and_cleanup_in_a_container() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = sandbox(dir.path(), false).await;
    let container = sandbox.container_id().to_owned();

    // Output, numeric lines, stderr and the exit code.
    let out = sandbox
        .run("echo 1; echo 2; echo oops >&2; exit 3", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, "1\n2\n");
    assert_eq!(out.stderr, "oops\n");
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out);

    // The workspace is the host directory, at /workspace inside.
    sandbox
        .write_file("in/a.txt", b"from host\n")
        .await
        .unwrap();
    let out = sandbox
        .run("pwd; cat in/a.txt; echo made > /workspace/b.txt", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, "/workspace\nfrom host\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "made\n"
    );
    assert!(sandbox.read_file("../outside").await.is_err());

    // Writes outside the workspace stay in the container.
    let marker = format!("/etc/openmanus-docker-{}", std::process::id());
    sandbox
        .run(&format!("echo x > {marker}"), None)
        .await
        .unwrap();
    assert!(!std::path::Path::new(&marker).exists());

    // No network: only the loopback interface exists.
    let out = sandbox.run("ls /sys/class/net", None).await.unwrap();
    assert_eq!(out.stdout.trim(), "lo");

    // The timeout kills the command.
    let started = Instant::now();
    let out = sandbox
        .run(
            "echo start; sleep 30; echo never",
            Some(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert_eq!(out.stdout, "start\n");
    assert!(started.elapsed() < Duration::from_secs(20));

    // Sessions keep their state between inputs.
    sandbox.start_session("s").await.unwrap();
    sandbox.send_to_session("s", "cd in; X=42\n").await.unwrap();
    sandbox
        .send_to_session("s", "echo \"$X in $(pwd)\"; echo END\n")
        .await
        .unwrap();
    let read = sandbox
        .read_session("s", Some("END"), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(read.matched);
    assert_eq!(read.stdout, "42 in /workspace/in\nEND\n");
    assert_eq!(sandbox.list_sessions().await, ["s"]);
    sandbox.kill_session("s").await.unwrap();
    assert!(sandbox.list_sessions().await.is_empty());

    // Cleanup removes the container.
    sandbox.cleanup().await.unwrap();
    let docker = agent_sandbox::connect_docker(None).await.unwrap();
    assert!(
        docker
            .inspect_container(
                &container,
                None::<bollard::query_parameters::InspectContainerOptions>
            )
            .await
            .is_err()
    );
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn sandbox_shell_runs_on_the_docker_backend() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox: Arc<dyn Sandbox> = Arc::new(sandbox(dir.path(), false).await);
    let shell = SandboxShell::new(Arc::clone(&sandbox), "/workspace");
    let ctx = ToolContext::default();
    let result = shell
        .execute(
            json!({"action": "execute_command", "blocking": true, "session_name": "main",
                   "command": "mkdir -p sub && cd sub && echo $((6*7)) > n.txt && cat n.txt"}),
            &ctx,
        )
        .await
        .unwrap();
    let value: Value = serde_json::from_str(result.output.as_deref().unwrap()).unwrap();
    assert_eq!(value["output"], "42");
    assert_eq!(value["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/n.txt")).unwrap(),
        "42\n"
    );
    shell.cleanup().await.unwrap();
    sandbox.cleanup().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn the_container_runs_as_the_workspace_owner() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    // Give the workspace to an ordinary user when we can (CI runs as root).
    let owner = if std::fs::metadata("/").unwrap().uid() == 0 && nix_chown(dir.path(), 1000, 1000) {
        1000
    } else {
        std::fs::metadata(dir.path()).unwrap().uid()
    };
    let sandbox = sandbox(dir.path(), false).await;
    let out = sandbox
        .run("id -u; echo made > mine.txt && echo written", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, format!("{owner}\nwritten\n"), "{out:?}");
    assert_eq!(
        std::fs::metadata(dir.path().join("mine.txt"))
            .unwrap()
            .uid(),
        owner
    );
    sandbox.cleanup().await.unwrap();
}

/// `chown` through the command (the tests have no libc binding); false when it fails.
fn nix_chown(path: &std::path::Path, uid: u32, gid: u32) -> bool {
    std::process::Command::new("chown")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

fn desktop_image() -> String {
    std::env::var("OPENMANUS_DOCKER_DESKTOP_IMAGE").expect(
        "OPENMANUS_DOCKER_DESKTOP_IMAGE names the display test image (cargo xtask ci builds and sets it)",
    )
}

/// Whether a host process is alive (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn a_display_runs_in_the_container_reached_through_its_socket_and_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = DockerSandbox::new(
        DockerSandboxOptions {
            image: desktop_image(),
            timeout: Duration::from_secs(60),
            ..DockerSandboxOptions::new(dir.path())
        }
        .with_display(),
    )
    .await
    .expect("the Docker sandbox starts with its display");
    let container = sandbox.container_id().to_owned();
    let display = sandbox.display().expect("the sandbox has a display");
    assert_eq!(display.name, ":0");
    assert_eq!(display.size, (1024, 768));
    assert!(display.server_pid > 0, "{display:?}");
    assert!(alive(display.server_pid));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", display.server_pid)).unwrap();
    assert!(
        String::from_utf8_lossy(&cmdline).starts_with("Xvfb\0:0\0"),
        "the exec became the X server: {:?}",
        String::from_utf8_lossy(&cmdline)
    );

    // The host reaches the server through the socket's host path, in a private directory.
    {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let kind = std::fs::metadata(&display.socket).unwrap().file_type();
        assert!(kind.is_socket(), "{}", display.socket.display());
        let private = display.socket.parent().unwrap().parent().unwrap();
        let mode = std::fs::metadata(private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", private.display());
        let mut stream = std::os::unix::net::UnixStream::connect(&display.socket).unwrap();
        // An X connection set-up (little-endian, protocol 11.0, no authorization) is accepted.
        use std::io::{Read, Write};
        stream
            .write_all(&[b'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            .unwrap();
        let mut status = [0_u8; 1];
        stream.read_exact(&mut status).unwrap();
        assert_eq!(status[0], 1, "the X server accepted the connection");
    }

    // Every command of the sandbox has DISPLAY and sees the socket; a Tk program draws there.
    let out = sandbox
        .run(
            "echo $DISPLAY; ls /tmp/.X11-unix; /usr/bin/python3 -c 'import tkinter; r = tkinter.Tk(); print(r.winfo_screenwidth(), r.winfo_screenheight())' 2>/dev/null",
            None,
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, ":0\nX0\n1024 768\n", "{out:?}");

    // A program left running on the display dies with the container, as does the server.
    sandbox.start_session("app").await.unwrap();
    sandbox
        .send_to_session(
            "app",
            "/usr/bin/python3 -c 'import tkinter; tkinter.Tk().mainloop()' 2>/dev/null & echo started $!\n",
        )
        .await
        .unwrap();
    let read = sandbox
        .read_session("app", Some("started"), Duration::from_secs(30))
        .await
        .unwrap();
    assert!(read.matched, "{read:?}");
    let docker = agent_sandbox::connect_docker(None).await.unwrap();
    let top = docker
        .top_processes(&container, None::<bollard::query_parameters::TopOptions>)
        .await
        .unwrap();
    let titles = top.titles.unwrap_or_default();
    let pid_column = titles.iter().position(|t| t == "PID").unwrap();
    let processes: Vec<(u32, String)> = top
        .processes
        .unwrap_or_default()
        .into_iter()
        .map(|row| (row[pid_column].parse().unwrap(), row.join(" ")))
        .collect();
    let app: Vec<u32> = processes
        .iter()
        .filter(|(_, line)| line.contains("tkinter.Tk().mainloop()") && !line.contains("echo"))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(app.len(), 1, "{processes:?}");
    sandbox.cleanup().await.unwrap();
    let start = Instant::now();
    while alive(display.server_pid) || alive(app[0]) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the X server or its program outlived the sandbox"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        docker
            .inspect_container(
                &container,
                None::<bollard::query_parameters::InspectContainerOptions>
            )
            .await
            .is_err()
    );
    drop(sandbox);
    assert!(
        !display.socket.parent().unwrap().parent().unwrap().exists(),
        "the socket directory is removed with the sandbox"
    );
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn an_image_without_the_x_server_is_a_clear_display_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = DockerSandbox::new(
        DockerSandboxOptions {
            image: image(),
            shell: "sh".to_owned(),
            ..DockerSandboxOptions::new(dir.path())
        }
        .with_display(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, SandboxError::DisplayUnavailable(_)),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!(
            "the X server `Xvfb` is not installed in the Docker image {:?}",
            image()
        )),
        "{text}"
    );
    assert!(text.contains("apt-get install -y xvfb"), "{text}");

    // The same image without a display still works.
    let sandbox = sandbox(dir.path(), false).await;
    assert!(sandbox.display().is_none());
    let out = sandbox.run("echo ${DISPLAY:-none}", None).await.unwrap();
    assert_eq!(out.stdout, "none\n");
    sandbox.cleanup().await.unwrap();
}

/// The owner labels of a container owned by process `pid` (as the sandbox writes them).
fn owned_by(pid: u32) -> std::collections::HashMap<String, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap();
    [
        ("org.openmanus.owner.pid", pid.to_string()),
        ("org.openmanus.owner.start", start),
        ("org.openmanus.owner.boot", boot.trim().to_owned()),
        (
            "org.openmanus.owner.pidns",
            namespace.to_string_lossy().into_owned(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

async fn labelled_container(
    docker: &bollard::Docker,
    labels: std::collections::HashMap<String, String>,
) -> String {
    let body = bollard::models::ContainerCreateBody {
        image: Some(image()),
        cmd: Some(vec!["sleep".to_owned(), "infinity".to_owned()]),
        labels: Some(labels),
        network_disabled: Some(true),
        ..Default::default()
    };
    let id = docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .unwrap()
        .id;
    docker
        .start_container(
            &id,
            None::<bollard::query_parameters::StartContainerOptions>,
        )
        .await
        .unwrap();
    id
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn a_container_whose_process_was_killed_is_removed_by_the_next_sandbox() {
    let docker = agent_sandbox::connect_docker(None).await.unwrap();
    // A process that owns a container and is killed with SIGKILL: no clean-up ran.
    let mut owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let orphan = labelled_container(&docker, owned_by(owner.id())).await;
    owner.kill().unwrap();
    owner.wait().unwrap();
    // One whose owner (this test) is alive stays.
    let kept = labelled_container(&docker, owned_by(std::process::id())).await;

    let dir = tempfile::tempdir().unwrap();
    let started = sandbox(dir.path(), false).await;
    let inspect = |id: String| {
        let docker = docker.clone();
        async move {
            docker
                .inspect_container(
                    &id,
                    None::<bollard::query_parameters::InspectContainerOptions>,
                )
                .await
        }
    };
    assert!(inspect(orphan).await.is_err(), "the orphan was removed");
    assert!(
        inspect(kept.clone()).await.is_ok(),
        "a live owner's container stays"
    );
    // The new sandbox's own container carries the labels, naming this process.
    let own = inspect(started.container_id().to_owned()).await.unwrap();
    let labels = own.config.and_then(|c| c.labels).unwrap_or_default();
    assert_eq!(
        labels.get("org.openmanus.owner.pid"),
        Some(&std::process::id().to_string())
    );
    started.cleanup().await.unwrap();
    let _ = docker
        .remove_container(
            &kept,
            Some(bollard::query_parameters::RemoveContainerOptions {
                force: true,
                ..Default::default()
            }),
        )
        .await;
}
