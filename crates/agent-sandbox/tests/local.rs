//! The local sandbox, for real: every test runs bwrap and asserts the effect. Where the probe
//! fails, the tests fail with its message (CI installs bubblewrap).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_sandbox::{LocalSandbox, LocalSandboxOptions, Sandbox, SandboxError};

const T: Option<Duration> = Some(Duration::from_secs(30));

async fn sandbox_with(options: LocalSandboxOptions) -> LocalSandbox {
    match LocalSandbox::new(options).await {
        Ok(sandbox) => sandbox,
        Err(error) => panic!("the sandbox cannot run here: {error}"),
    }
}

async fn sandbox(dir: &Path) -> LocalSandbox {
    sandbox_with(LocalSandboxOptions::new(dir)).await
}

#[tokio::test]
async fn probe_succeeds() {
    let probe = LocalSandbox::probe()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(probe.bwrap_version.contains("bubblewrap"), "{probe:?}");
    // The same findings as data (what `openmanus doctor` reports).
    let checked = LocalSandbox::check(agent_sandbox::PROBE_LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked, probe);
}

#[tokio::test]
async fn writes_only_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("planted");
    let sb = sandbox(dir.path()).await;
    let cmd = format!(
        "echo hi > {0}; echo x > /etc/planted; echo y > /usr/planted; echo ok > /workspace/in.txt",
        target.display()
    );
    let out = sb.run(&cmd, T).await.unwrap();
    assert!(out.stderr.contains("Read-only file system"), "{out:?}");
    assert!(!target.exists());
    assert!(!Path::new("/etc/planted").exists());
    assert!(!Path::new("/usr/planted").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("in.txt")).unwrap(),
        "ok\n"
    );
    // The sandbox's /tmp is private: nothing lands in the host's /tmp.
    let marker = format!("agent-sandbox-tmp-{}", std::process::id());
    let out = sb
        .run(&format!("echo z > /tmp/{marker} && cat /tmp/{marker}"), T)
        .await
        .unwrap();
    assert_eq!(out.stdout, "z\n");
    assert!(!Path::new("/tmp").join(&marker).exists());
}

#[tokio::test]
async fn hidden_files_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    // A host directory outside /tmp (which the sandbox replaces anyway; the checkout itself may be
    // under /tmp), visible by default.
    let host = tempfile::tempdir_in("/var/tmp").unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET").unwrap();
    let visible = sandbox(dir.path()).await;
    let out = visible
        .run(&format!("cat {}", secret.display()), T)
        .await
        .unwrap();
    assert_eq!(
        out.stdout, "TOPSECRET",
        "control: the file is readable when not hidden"
    );

    let mut options = LocalSandboxOptions::new(dir.path());
    options.hidden_paths.push(host.path().to_path_buf());
    let hidden = sandbox_with(options).await;
    let out = hidden
        .run(&format!("cat {}", secret.display()), T)
        .await
        .unwrap();
    assert!(!out.stdout.contains("TOPSECRET"), "{out:?}");
    assert_ne!(out.exit_code, Some(0));
    // The defaults hide /root, /home, /run and the password hashes, and /tmp is private.
    let tmp_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp_file.path(), "TMPSECRET").unwrap();
    let out = hidden
        .run(
            &format!(
                "cat {} /etc/shadow; ls -A /root /home /run",
                tmp_file.path().display()
            ),
            T,
        )
        .await
        .unwrap();
    assert!(
        !out.stdout.contains("TMPSECRET") && !out.stdout.contains("root:*"),
        "{out:?}"
    );
    assert_eq!(out.stdout, "/home:\n\n/root:\n\n/run:\n", "{out:?}");
    // The host environment is not passed in.
    // The test process has CARGO_* variables; the sandbox must not.
    let out = hidden.run("cat /etc/shadow /etc/gshadow", T).await.unwrap();
    assert_eq!(out.stdout, "", "{out:?}");
    let out = hidden.run("env", T).await.unwrap();
    assert!(!out.stdout.contains("CARGO"), "{out:?}");
}

#[tokio::test]
async fn network_only_when_enabled() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let dir = tempfile::tempdir().unwrap();
    let off = sandbox(dir.path()).await;
    let out = off.run(&probe, T).await.unwrap();
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert!(!out.stdout.contains("connected"), "{out:?}");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );

    let mut options = LocalSandboxOptions::new(dir.path());
    options.network_enabled = true;
    let on = sandbox_with(options).await;
    let out = on.run(&probe, T).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "connected\n");
}

/// Processes whose command line contains `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    agent_process::processes_with(marker)
}

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path()).await;
    let marker = format!("9{}.123", std::process::id());
    // A child, a grandchild in a new session, and a foreground sleep.
    let cmd = format!("sleep {marker} & setsid bash -c 'sleep {marker}' & sleep {marker}");
    let started = Instant::now();
    let out = sb
        .run(&cmd, Some(Duration::from_millis(500)))
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Bounded polling of /proc until the killed processes are gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = with_marker(&marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::yield_now();
        left = with_marker(&marker);
    }
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[tokio::test]
async fn memory_hog_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path()).await; // 512 MiB default
    let out = sb
        .run(
            "python3 -c 'x = bytearray(2*1024**3); print(\"allocated\")'",
            T,
        )
        .await
        .unwrap();
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert!(!out.stdout.contains("allocated"), "{out:?}");
    assert!(out.stderr.contains("MemoryError"), "{out:?}");
    // Control: a modest allocation works under the same limit.
    let out = sb
        .run(
            "python3 -c 'x = bytearray(50*1024**2); print(\"allocated\")'",
            T,
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, "allocated\n", "{out:?}");
}

#[tokio::test]
async fn settings_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let sb = LocalSandbox::from_settings(dir.path(), "/sandbox", "256m", 2.0, 10, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let out = sb
        .run("pwd; ulimit -v; ulimit -t; ulimit -u", None)
        .await
        .unwrap();
    assert_eq!(
        out.stdout,
        format!("/sandbox\n{}\n20\n1024\n", 256 * 1024),
        "{out:?}"
    );
    assert!(matches!(
        LocalSandbox::from_settings(dir.path(), "/w", "much", 1.0, 10, false).await,
        Err(SandboxError::InvalidSetting(_))
    ));
}

#[tokio::test]
async fn numeric_lines_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path()).await;
    let out = sb
        .run("echo 0; echo 42; echo; echo '$ '; echo 7 >&2; exit 3", T)
        .await
        .unwrap();
    assert_eq!(out.stdout, "0\n42\n\n$ \n");
    assert_eq!(out.stderr, "7\n");
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out);
    let out = sb.run("kill -9 $$", T).await.unwrap();
    assert_eq!(out.exit_code, Some(137));
}

#[tokio::test]
async fn paths_are_confined() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path()).await;
    sb.write_file("a/b.txt", b"data").await.unwrap();
    assert_eq!(sb.read_file("/workspace/a/b.txt").await.unwrap(), b"data");
    assert_eq!(sb.run("cat a/b.txt", T).await.unwrap().stdout, "data");
    for bad in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "/workspace/../etc/passwd",
    ] {
        assert!(
            matches!(
                sb.read_file(bad).await,
                Err(SandboxError::PathRefused { .. })
            ),
            "{bad}"
        );
        assert!(
            matches!(
                sb.write_file(bad, b"x").await,
                Err(SandboxError::PathRefused { .. })
            ),
            "{bad}"
        );
    }
    // A link made inside the sandbox pointing out of the workspace is not followed.
    let out = sb
        .run("ln -s /etc escape && ln -s /nowhere/file dangling", T)
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert!(matches!(
        sb.read_file("escape/passwd").await,
        Err(SandboxError::PathRefused { .. })
    ));
    assert!(matches!(
        sb.write_file("dangling", b"x").await,
        Err(SandboxError::PathRefused { .. })
    ));
    assert!(matches!(
        sb.copy_out("escape", dir.path()).await,
        Err(SandboxError::PathRefused { .. })
    ));
    assert!(matches!(
        sb.read_file("missing").await,
        Err(SandboxError::NotFound(_))
    ));
}

#[tokio::test]
async fn copy_in_and_out() {
    let dir = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir(host.path().join("src")).unwrap();
    std::fs::write(host.path().join("src/one.txt"), "1").unwrap();
    std::fs::write(host.path().join("src/two.txt"), "2").unwrap();
    let sb = sandbox(dir.path()).await;
    sb.copy_in(&host.path().join("src"), "copied")
        .await
        .unwrap();
    let out = sb
        .run(
            "cat copied/one.txt copied/two.txt; echo 3 > copied/three.txt",
            T,
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, "12");
    sb.copy_out("copied", &host.path().join("back"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(host.path().join("back/three.txt")).unwrap(),
        "3\n"
    );
    sb.copy_out("copied/one.txt", &host.path().join("one"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(host.path().join("one")).unwrap(),
        "1"
    );
}

#[tokio::test]
async fn sessions_keep_state_and_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path()).await;
    sb.start_session("main").await.unwrap();
    assert!(matches!(
        sb.start_session("main").await,
        Err(SandboxError::SessionExists(_))
    ));
    assert_eq!(sb.list_sessions().await, vec!["main".to_owned()]);
    sb.send_to_session("main", "cd /tmp && X=5\n")
        .await
        .unwrap();
    sb.send_to_session("main", "echo \"$PWD $X\"; echo 12; echo done-1\n")
        .await
        .unwrap();
    let out = sb
        .read_session("main", Some("done-1"), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(out.matched, "{out:?}");
    assert_eq!(out.stdout, "/tmp 5\n12\ndone-1\n");
    let marker = format!("8{}.321", std::process::id());
    sb.send_to_session("main", &format!("sleep {marker} &\necho started\n"))
        .await
        .unwrap();
    let out = sb
        .read_session("main", Some("started"), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(out.matched, "{out:?}");
    // `started` can be printed before the forked job has exec'd `sleep`: wait for it (bounded).
    let deadline = Instant::now() + Duration::from_secs(5);
    while with_marker(&marker).is_empty() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(!with_marker(&marker).is_empty(), "the background job runs");
    sb.kill_session("main").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !with_marker(&marker).is_empty() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(
        with_marker(&marker).is_empty(),
        "the session's processes are gone"
    );
    assert!(matches!(
        sb.read_session("main", None, Duration::ZERO).await,
        Err(SandboxError::NoSuchSession(_))
    ));
    sb.start_session("other").await.unwrap();
    sb.cleanup().await.unwrap();
    assert!(sb.list_sessions().await.is_empty());
    assert!(matches!(sb.run("true", T).await, Err(SandboxError::Closed)));
}

#[tokio::test]
async fn the_file_operator_is_confined_to_the_workspace() {
    use agent_sandbox::SandboxFileOperator;
    use agent_tools::FileOperator;
    use agent_tools::editor::PathKind;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let sb = Arc::new(sandbox_with(LocalSandboxOptions::new(&ws).mirrored()).await);
    let op = SandboxFileOperator::new(sb.clone());
    op.write_file(&ws.join("a/b.txt"), b"hi").await.unwrap();
    assert_eq!(op.read_file(&ws.join("a/b.txt")).await.unwrap(), b"hi");
    assert_eq!(op.kind(&ws.join("a")).await.unwrap(), PathKind::Directory);
    assert_eq!(op.kind(&ws.join("nope")).await.unwrap(), PathKind::Missing);
    assert_eq!(op.read_dir(&ws).await.unwrap().len(), 1);
    let refused = op.read_file(Path::new("/etc/hostname")).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
    std::os::unix::fs::symlink("/etc", ws.join("out")).unwrap();
    let refused = op.read_file(&ws.join("out/hostname")).await.unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::PermissionDenied,
        "{refused}"
    );
    let refused = op.write_file(&ws.join("out/x"), b"x").await.unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::PermissionDenied,
        "{refused}"
    );
    assert!(!Path::new("/etc/x").exists());
}

#[tokio::test]
async fn the_launcher_runs_a_long_lived_program_in_the_sandbox_and_dies_with_its_group() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let sb = sandbox_with(LocalSandboxOptions::new(&ws).mirrored()).await;
    let argv = sb.launcher();
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .args(["bash", "--noprofile", "--norc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // A background process that left the group (setsid) still dies with the sandbox.
    stdin
        .write_all(
            b"setsid sleep 1000 & pwd; echo x > /etc/x 2>/dev/null || echo refused; echo $$\n",
        )
        .await
        .unwrap();
    assert_eq!(
        lines.next_line().await.unwrap().unwrap(),
        ws.display().to_string()
    );
    assert_eq!(lines.next_line().await.unwrap().unwrap(), "refused");
    assert_ne!(lines.next_line().await.unwrap().unwrap(), "");
    let pgid = i32::try_from(child.id().unwrap()).unwrap();
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().await.unwrap();
    // Every process of the sandbox is gone, the setsid one too: its end of the pipe closes.
    let drained = tokio::time::timeout(Duration::from_secs(10), async {
        while lines.next_line().await.unwrap().is_some() {}
    })
    .await;
    assert!(
        drained.is_ok(),
        "a sandboxed process outlived the killed group"
    );
}

#[tokio::test]
async fn sandbox_shell_survives_commands_that_read_stdin_and_floods_of_output() {
    use agent_sandbox::tools::SandboxShell;
    use agent_tools::{Tool, ToolContext};
    use serde_json::{Value, json};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let sandbox: Arc<dyn Sandbox> = Arc::new(sandbox(dir.path()).await);
    let shell = SandboxShell::new(Arc::clone(&sandbox), "/workspace");
    let ctx = ToolContext::default();
    let run = |command: &'static str| {
        let shell = &shell;
        let ctx = &ctx;
        async move {
            let result = shell
                .execute(
                    json!({"action": "execute_command", "session_name": "s", "blocking": true,
                           "timeout": 60, "command": command}),
                    ctx,
                )
                .await
                .unwrap();
            let value: Value = serde_json::from_str(result.output.as_deref().unwrap_or("{}"))
                .unwrap_or_else(|_| panic!("{result:?}"));
            value
        }
    };
    // `cat` reads standard input: it gets none, ends, and the marker line is not swallowed.
    let cat = tokio::time::timeout(Duration::from_secs(60), run("cat; echo after-cat"))
        .await
        .expect("cat hung the session");
    assert_eq!(cat["completed"], true, "{cat}");
    assert_eq!(cat["exit_code"], 0, "{cat}");
    assert_eq!(cat["output"], "after-cat");
    // 20 MB of output: over the session buffer's limit, yet the end (and its marker) arrives.
    let flood = tokio::time::timeout(
        Duration::from_secs(60),
        run("head -c 20000000 /dev/zero | tr '\\0' x; echo; echo tail-line"),
    )
    .await
    .expect("a flood of output hung the session");
    assert_eq!(flood["completed"], true);
    assert_eq!(flood["exit_code"], 0);
    assert!(
        flood["output"].as_str().unwrap().ends_with("xx\ntail-line"),
        "the end of the output is kept"
    );
    // The session is still usable.
    let next = run("echo still-here").await;
    assert_eq!(next["output"], "still-here");
    shell.cleanup().await.unwrap();
}
