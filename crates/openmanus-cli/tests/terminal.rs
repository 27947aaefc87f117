//! The terminal side of the command line: shell completions, `--output-last-message`,
//! colour rules (`NO_COLOR`, `TERM=dumb`, `--color`) checked through a real pseudo-terminal,
//! JSON from `config check`, `mcp-server` refusing flags it would ignore, streamed text in
//! `--json`, and `-i`'s line editor driven through tmux.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agent_testkit::{Completion, Fault, MockOpenAi};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common::call;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// A working directory with `config/config.toml` pointing at the mock, and a home of its own.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(server: &MockOpenAi) -> Self {
        Self::with_llm(server, "")
    }

    fn with_llm(server: &MockOpenAi, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!(
                "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-term\"\nmax_attempts = 1\n{extra}",
                server.base_url()
            ),
        )
        .unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.path())
            .env_remove("OPENMANUS_CONFIG")
            .env_remove("NO_COLOR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", self.path().join("home"))
            .env("TERM", "xterm-256color")
            .env("TMPDIR", self.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        wait(self.command().args(args)).await
    }
}

async fn wait(command: &mut Command) -> Output {
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("openmanus did not finish")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn finish(server: &MockOpenAi, answer: &str) {
    server.push(Completion::tool_calls(
        Some(answer.into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
}

#[tokio::test]
async fn completions_are_generated_for_bash_zsh_and_fish() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef openmanus"),
        ("fish", "complete -c openmanus"),
    ] {
        let output = setup.run(&["completions", shell]).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let script = text(&output.stdout);
        assert!(script.contains(marker), "{shell}:\n{script}");
        // Subcommands and the new flags are in it.
        for word in ["sessions", "output-last-message", "completions"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    // bash can load what it generated.
    let output = setup.run(&["completions", "bash"]).await;
    let script = setup.path().join("openmanus.bash");
    std::fs::write(&script, &output.stdout).unwrap();
    let check = wait(Command::new("bash").arg("-c").arg(format!(
        "source {} && complete -p openmanus",
        script.display()
    )))
    .await;
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("openmanus"));
}

#[tokio::test]
async fn the_last_answer_is_written_to_the_file_asked_for() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    finish(&server, "The answer is 42.");
    let file = setup.path().join("answer.txt");
    let output = setup
        .run(&[
            "--no-store",
            "--output-last-message",
            file.to_str().unwrap(),
            "-p",
            "What is the answer?",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "The answer is 42.\n"
    );
    // The answer is labelled on standard error and printed once on standard output.
    let stderr = text(&output.stderr);
    assert!(stderr.contains("■ answer"), "{stderr}");
    assert!(
        !stderr.contains("The answer is 42."),
        "the last thought is not repeated before the answer:\n{stderr}"
    );
    assert_eq!(text(&output.stdout).trim(), "The answer is 42.");

    // A file that cannot be written fails the run (exit 1) after the answer is printed.
    finish(&server, "Again.");
    let output = setup
        .run(&[
            "--no-store",
            "--output-last-message",
            "/nonexistent-dir/answer.txt",
            "-p",
            "Again?",
        ])
        .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("cannot write the answer to /nonexistent-dir/answer.txt"),
        "{}",
        text(&output.stderr)
    );
}

/// Runs openmanus under a pseudo-terminal (util-linux `script`), returning all it wrote.
async fn under_a_terminal(setup: &Setup, env: &[(&str, &str)], args: &str) -> String {
    let mut command = Command::new("script");
    command
        .args(["-q", "-e", "-c", &format!("{BIN} {args}"), "/dev/null"])
        .current_dir(setup.path())
        .env_remove("OPENMANUS_CONFIG")
        .env_remove("NO_COLOR")
        .env("HOME", setup.path().join("home"))
        .env("TERM", "xterm-256color")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = wait(&mut command).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

#[tokio::test]
async fn no_color_term_dumb_and_color_never_leave_no_escape_codes() {
    let server = MockOpenAi::start().await.unwrap();
    // The model takes a moment, so a spinner would have had time to draw.
    let setup = Setup::new(&server);
    let slow = |answer: &str| {
        Fault::slow_first_byte(
            Duration::from_millis(400),
            Completion::tool_calls(
                Some(answer.into()),
                [call("t", "terminate", json!({"status": "success"}))],
            ),
        )
    };

    // On a terminal, by default: colours and the spinner (this is what the others turn off).
    server.push(slow("Coloured."));
    let coloured = under_a_terminal(&setup, &[], "--no-store -p go").await;
    assert!(coloured.contains('\x1b'), "{coloured:?}");
    assert!(coloured.contains("Coloured."));

    for (env, flag) in [
        (vec![("NO_COLOR", "1")], ""),
        (vec![("TERM", "dumb")], ""),
        (vec![], "--color never"),
    ] {
        server.push(slow("Plain."));
        let plain = under_a_terminal(&setup, &env, &format!("--no-store {flag} -p go")).await;
        assert!(plain.contains("Plain."), "{plain:?}");
        assert!(
            !plain.contains('\x1b'),
            "escape codes with {env:?} {flag}: {plain:?}"
        );
    }

    // --color always colours even into a pipe.
    finish(&server, "Forced.");
    let output = setup
        .run(&["--no-store", "--color", "always", "-p", "go"])
        .await;
    assert!(
        text(&output.stderr).contains('\x1b'),
        "{}",
        text(&output.stderr)
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn quiet_prints_the_answer_and_nothing_else() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    finish(&server, "Only this.");
    let output = setup.run(&["-q", "-p", "go"]).await;
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output.stdout), "Only this.\n");
    assert_eq!(text(&output.stderr), "", "nothing on standard error");
}

/// A stuck agent is reported once, by the live view's own line: no library warning about it
/// lands between the steps.
#[tokio::test]
async fn a_stuck_agent_is_reported_once_without_log_lines() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    for _ in 0..4 {
        server.push(Completion::text("Still thinking it over."));
    }
    let output = setup
        .run(&["--agent", "swe", "-c", "agent.max_steps=4", "-p", "go"])
        .await;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the agent is repeating itself"),
        "the live view reports it:\n{stderr}"
    );
    assert!(
        !stderr.contains("WARN") && !stderr.contains("stuck state"),
        "no log line about it:\n{stderr}"
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn config_check_json_lists_models_mcp_servers_and_warnings() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::with_llm(
        &server,
        "\n[mcp]\nserver_reference = \"app.mcp.server\"\n\n[daytona]\ndaytona_api_key = \"k\"\n",
    );
    std::fs::write(
        setup.path().join("config/mcp.json"),
        json!({"mcpServers": {
            "files": {"type": "stdio", "command": "mcp-files", "args": ["--root", "/srv"], "env": {"TOKEN": "secret-token"}},
            "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"Authorization": "Bearer secret-header"}}
        }})
        .to_string(),
    )
    .unwrap();

    let output = setup
        .run(&["config", "check", "--json", "-c", "llm.temperature=0.5"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let value: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(value["ok"], true);
    assert_eq!(value["llm"]["default"]["model"], "gpt-4o");
    assert_eq!(value["llm"]["default"]["temperature"], 0.5);
    assert_eq!(value["llm"]["default"]["api_key"], "<redacted>");
    assert_eq!(value["agents"]["manus"]["model"], "gpt-4o");
    assert_eq!(value["overrides"], json!(["llm.temperature=0.5"]));
    assert_eq!(
        value["mcp_servers"],
        json!([
            {"id": "files", "transport": "stdio", "target": "mcp-files --root /srv"},
            {"id": "remote", "transport": "sse", "target": "http://127.0.0.1:9/sse"}
        ])
    );
    let warnings = value["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("`daytona` does nothing")
    );
    assert!(!stdout.contains("secret-"), "no secrets: {stdout}");

    // The text form lists the servers and warns on standard error.
    let output = setup.run(&["config", "check"]).await;
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("  files: stdio mcp-files --root /srv"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  remote: sse http://127.0.0.1:9/sse"),
        "{stdout}"
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("warning: `mcp.server_reference` does nothing"),
        "{stderr}"
    );
}

#[tokio::test]
async fn mcp_server_refuses_flags_it_would_ignore() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    for args in [
        &["mcp-server", "--port", "9000"][..],
        &["mcp-server", "--json"],
        &["mcp-server", "--model", "m"],
        &["mcp-server", "--transport", "http", "--workspace", "w"],
    ] {
        let output = setup.run(args).await;
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            text(&output.stderr).contains("mcp-server does not use"),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

#[tokio::test]
async fn streamed_text_reaches_the_json_output_before_the_reply_ends() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    // The reply's first piece of text is sent, then the stream stays open and silent.
    server.push(Fault::stall_stream(
        2,
        Completion::tool_calls(
            Some("Streaming this reply slowly.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ),
    ));
    let mut child = setup
        .command()
        .args(["--no-store", "--json", "-p", "Stream."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let delta = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            assert_ne!(event["type"], "thought", "a thought before any delta");
            if event["type"] == "text_delta" {
                return event;
            }
        }
        panic!("no text_delta line before the output ended");
    })
    .await
    .expect("no text_delta within 60 s");
    assert!(
        "Streaming this reply slowly.".starts_with(delta["text"].as_str().unwrap()),
        "{delta}"
    );
    // The reply has not ended: the stream is still open and the run still going.
    assert!(child.try_wait().unwrap().is_none(), "the run ended already");
    assert_eq!(server.request_count(), 1);
    child.kill().await.unwrap();
}

/// A tmux server of this test's own (its socket in the test's directory).
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    async fn run(&self, args: &[&str]) -> Output {
        wait(Command::new("tmux").arg("-S").arg(&self.socket).args(args)).await
    }

    async fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "cli"];
        args.extend_from_slice(keys);
        let output = self.run(&args).await;
        assert!(output.status.success(), "{}", text(&output.stderr));
    }

    /// Starts the session `cli` (200 by 60) running `command`.
    async fn start(&self, command: &str) {
        let started = self
            .run(&[
                "new-session",
                "-d",
                "-s",
                "cli",
                "-x",
                "200",
                "-y",
                "60",
                command,
            ])
            .await;
        assert!(started.status.success(), "{}", text(&started.stderr));
    }

    async fn screen(&self) -> String {
        text(&self.run(&["capture-pane", "-p", "-t", "cli"]).await.stdout)
    }

    /// Waits until the screen shows `needle` `count` times.
    async fn wait_for(&self, needle: &str, count: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen().await;
            if screen.matches(needle).count() >= count {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} x{count} on:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

#[tokio::test]
async fn interactive_mode_edits_lines_and_recalls_history() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    finish(&server, "First done.");
    finish(&server, "Second done.");
    let data = setup.path().join("data");
    let tmux = Tmux {
        socket: setup.path().join("tmux.sock"),
    };
    let command = format!(
        "cd {} && env -u OPENMANUS_CONFIG HOME={} XDG_DATA_HOME={} TERM=xterm NO_COLOR=1 {BIN} --no-store -i",
        setup.path().display(),
        setup.path().join("home").display(),
        data.display()
    );
    tmux.start(&command).await;
    tmux.wait_for("Task (empty line to quit):", 1).await;

    // Type, then fix a typo in the middle with the arrow keys: "count the fles" -> "files".
    tmux.keys(&["-l", "count the fles now"]).await;
    for _ in 0.."les now".len() {
        tmux.keys(&["Left"]).await;
    }
    tmux.keys(&["-l", "i"]).await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("First done.", 1).await;
    tmux.wait_for("Task (empty line to quit):", 2).await;

    // Up recalls the previous task; it is sent again, as edited.
    tmux.keys(&["Up"]).await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("Second done.", 1).await;
    assert!(
        !screen.contains("^[[A"),
        "the Up key was not typed in:\n{screen}"
    );

    let tasks: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.messages()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks[0].contains("count the files now"), "{tasks:?}");
    assert_eq!(
        tasks[1].matches("count the files now").count(),
        2,
        "the second task is the recalled one, in the same conversation: {tasks:?}"
    );

    // The history is kept in the data directory for the next session.
    tmux.wait_for("Task (empty line to quit):", 3).await;
    tmux.keys(&["Enter"]).await;
    let history = data.join("openmanus/history");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !history.is_file() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.contains("count the files now"), "{saved}");
    server.verify().unwrap();
}

#[tokio::test]
async fn an_image_reaches_the_model_as_an_image_part() {
    use base64::Engine as _;
    const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let image = setup.path().join("pixel.png");
    std::fs::write(
        &image,
        base64::engine::general_purpose::STANDARD
            .decode(PIXEL)
            .unwrap(),
    )
    .unwrap();
    finish(&server, "A single pixel.");
    let output = setup
        .run(&[
            "--no-store",
            "-q",
            "--image",
            image.to_str().unwrap(),
            "-p",
            "What is in the image?",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "A single pixel.");
    let request = &server.requests()[0];
    let parts: Vec<&Value> = request
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .collect();
    let url = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .unwrap_or_else(|| panic!("no image part in {:?}", request.messages()))["image_url"]["url"]
        .as_str()
        .unwrap();
    assert_eq!(url, format!("data:image/png;base64,{PIXEL}"));
    assert!(
        parts
            .iter()
            .any(|p| p["text"].as_str() == Some("Image attached to the task: pixel.png")),
        "{parts:?}"
    );
    server.verify().unwrap();

    // Not an image: refused before anything runs.
    std::fs::write(setup.path().join("notes.txt"), "text").unwrap();
    let output = setup
        .run(&["--no-store", "--image", "notes.txt", "-p", "Look."])
        .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("notes.txt is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(server.request_count(), 1);
}

/// `on-request` at a terminal (issue 32): a bash call that needs the network is refused by the
/// sandbox and asked about; "deny" gives the model an observation saying so; "always" runs it
/// unconfined and writes a rule; the next identical call runs unconfined without a question.
#[tokio::test]
async fn a_refused_call_is_asked_about_denied_then_always_allowed_by_a_rule() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (received, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let received = received.clone();
            tokio::spawn(async move {
                let mut text = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut text).await;
                let _ = received.send(text);
            });
        }
    });
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let command = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && echo ping >&3 && exec 3>&- && echo connected"
    );
    for id in ["c1", "c2", "c3"] {
        server.push(Completion::tool_calls(
            None,
            [call(id, "bash", json!({"command": command}))],
        ));
    }
    finish(&server, "Reached it.");
    let tmux = Tmux {
        socket: setup.path().join("tmux.sock"),
    };
    let run = format!(
        "cd {} && env -u OPENMANUS_CONFIG -u XDG_CONFIG_HOME HOME={} TERM=xterm NO_COLOR=1 {BIN} --no-store --agent swe -p 'Reach the local server.'; sleep 600",
        setup.path().display(),
        setup.path().join("home").display(),
    );
    tmux.start(&run).await;
    let question = "Run it without the sandbox?";
    let screen = tmux.wait_for(question, 1).await;
    assert!(
        screen.contains("needs more than the sandbox (workspace-write) allows"),
        "{screen}"
    );
    tmux.keys(&["-l", "d"]).await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for(question, 2).await;
    tmux.keys(&["-l", "always"]).await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("Reached it.", 1).await;
    assert_eq!(
        screen.matches(question).count(),
        2,
        "the third call, under the rule, was asked:\n{screen}"
    );
    // The allowed calls reached the server, the denied one did not.
    let mut pings = Vec::new();
    while pings.len() < 2 {
        let ping = tokio::time::timeout(Duration::from_secs(60), arrivals.recv())
            .await
            .expect("the allowed calls reached the server")
            .unwrap();
        pings.push(ping);
    }
    assert_eq!(pings, ["ping\n", "ping\n"]);
    assert!(
        arrivals.try_recv().is_err(),
        "more connections than allowed calls"
    );

    let rules = std::fs::read_to_string(setup.path().join("home/.config/openmanus/rules.toml"))
        .expect("the rules file was written");
    assert!(
        rules.contains("decision = \"allow\"")
            && rules.contains(&format!("/dev/tcp/127.0.0.1/{port}")),
        "{rules}"
    );

    let tool_messages = |request: usize| -> Vec<String> {
        server.requests()[request]
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let after_deny = tool_messages(1);
    assert!(
        after_deny[0].contains(
            "[openmanus] The sandbox (workspace-write) refused this bash call (the network)"
        ),
        "{after_deny:?}"
    );
    let at_end = tool_messages(3);
    for allowed in &at_end[1..] {
        assert!(
            allowed.contains("Run again without the sandbox") && allowed.contains("connected"),
            "{at_end:?}"
        );
    }
    server.verify().unwrap();
}
