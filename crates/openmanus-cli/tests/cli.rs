//! The `openmanus` binary as a subprocess against the strict mock OpenAI server: Manus and SWE
//! runs with real tools and files, the demo, config checking, exit codes, the journal, and
//! Ctrl-C in the middle of a bash command.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agent_session::journal::JournalLine;
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::common::{Setup, alive, call};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The record of the run: the session the run named on stderr, exported from the store in
/// `workspace` to a journal file (the store is a recorded run's one record), and its entries as
/// read back (a model request as `{"kind": "model_request", "body": <the body it sent>}`).
async fn journal(output: &Output, workspace: &Path) -> (PathBuf, Vec<Value>) {
    let stderr = text(&output.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session line in:\n{stderr}"));
    assert!(
        !stderr.contains("journal: "),
        "a recorded run writes no journal of its own:\n{stderr}"
    );
    let store = agent_session::store::Store::open(workspace.join(".openmanus/sessions.db"))
        .await
        .unwrap();
    let path = workspace.with_extension(format!("{id}.jsonl"));
    let file = std::fs::File::create(&path).unwrap();
    agent_session::journal::export_session(&store, id, file)
        .await
        .unwrap();
    store.close().await;
    let entries = agent_session::journal::read(&path)
        .unwrap_or_else(|e| panic!("bad export {}: {e}", path.display()))
        .into_iter()
        .map(|line| match line {
            JournalLine::Request { body, .. } => json!({"kind": "model_request", "body": body}),
            JournalLine::Entry(entry) => entry,
        })
        .collect();
    (path, entries)
}

fn kinds(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn manus_writes_and_edits_a_file_prints_the_answer_and_journals_the_run() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-cli-test");
    let setup = Setup::new(&server);
    let file = setup.workspace().join("report.txt");
    server
        .push(Completion::tool_calls(
            Some("Writing the report.".into()),
            [call("c1", "python_execute", json!({"code": "open('report.txt','w').write('draft: 41\\n')\nprint('ok')"}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call("c2", "str_replace_editor", json!({"command": "str_replace", "path": file, "old_str": "draft: 41", "new_str": "final: 42"}))],
        ))
        .push(Completion::tool_calls(
            Some("The report says final: 42.".into()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));

    let output = setup.run(&["--prompt", "Write the report."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "final: 42\n");
    assert_eq!(
        text(&output.stdout).trim(),
        "The report says final: 42.",
        "the final answer is printed"
    );
    assert!(stderr.contains("step 1/20"), "{stderr}");
    assert!(stderr.contains("python_execute("), "{stderr}");
    assert!(
        stderr.contains("+ report.txt"),
        "the created file is named:\n{stderr}"
    );
    server.verify().unwrap();

    let (path, entries) = journal(&output, &setup.workspace()).await;
    assert!(
        !setup.workspace().join(".openmanus/runs").exists(),
        "the store is the run's one record"
    );
    let kinds = kinds(&entries);
    assert_eq!(kinds.iter().filter(|k| **k == "model_request").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "model_response").count(), 3);
    // The journal holds each request exactly as it went on the wire.
    let journaled: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "model_request")
        .map(|e| &e["body"])
        .collect();
    let received: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(journaled, received.iter().collect::<Vec<_>>());
    assert_eq!(journaled[0]["model"], "gpt-4o");
    assert_eq!(journaled[0]["max_tokens"], 1024);
    assert_eq!(kinds[kinds.len() - 2..], ["result", "memory"]);
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "event" && e["event"]["type"] == "tool_call_finished")
    );
    let journal_text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !journal_text.contains("sk-cli-test"),
        "the API key never reaches the record"
    );
    let store = std::fs::read(setup.workspace().join(".openmanus/sessions.db")).unwrap();
    assert!(
        !store.windows(11).any(|w| w == b"sk-cli-test"),
        "the API key never reaches the store"
    );
}

#[tokio::test]
async fn swe_runs_bash_and_max_steps_gives_exit_code_3() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "bash",
                json!({"command": "echo from-bash > b.txt; cat b.txt"}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call("c2", "bash", json!({"command": "ls"}))],
        ));
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[agent]\nmax_steps = 2\n",
            server.base_url()
        ),
    )
    .unwrap();
    let output = setup
        .run(&["--agent", "swe", "--prompt", "Make b.txt"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(
        stderr.contains("Terminated: Reached max steps (2)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("b.txt")).unwrap(),
        "from-bash\n"
    );
    assert!(
        stderr.contains("from-bash"),
        "the observation is shown:\n{stderr}"
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn the_demo_runs_offline_with_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(BIN)
            .args(["demo", "--workspace"])
            .arg(&workspace)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(
        stderr.contains("scripted"),
        "the demo says the replies are scripted:\n{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("hello.py")).unwrap(),
        "print(\"Hello from openmanus-rs!\")\n"
    );
    assert!(
        stderr.contains("Hello from openmanus-rs!"),
        "the edited script ran:\n{stderr}"
    );
    assert!(
        text(&output.stdout).starts_with("Done. I created"),
        "{}",
        text(&output.stdout)
    );
}

#[tokio::test]
async fn config_check_shows_effective_settings_without_the_key_and_bad_configs_name_the_line() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let output = setup.run(&["config", "check"]).await;
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert!(
        all.contains("gpt-4o") && all.contains(&server.base_url()),
        "{all}"
    );
    assert!(!all.contains("sk-cli-test"), "the key is redacted:\n{all}");

    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_tokens = \"many\"\n",
    )
    .unwrap();
    let output = setup.run(&["config", "check"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("config/config.toml:4:") && stderr.contains("max_tokens"),
        "{stderr}"
    );
}

#[tokio::test]
async fn an_empty_prompt_is_a_warning_and_nothing_runs() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let output = setup.run(&["--prompt", ""]).await;
    assert_eq!(output.status.code(), Some(0));
    assert!(
        text(&output.stderr).contains("Empty prompt provided"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(server.request_count(), 0);
    assert!(
        !setup.workspace().join(".openmanus").exists(),
        "no journal for a run that never started"
    );
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn ctrl_c_in_the_middle_of_a_bash_command_leaves_no_child_and_a_closed_journal() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server.push(Completion::tool_calls(
        None,
        [call(
            "c1",
            "bash",
            json!({"command": "echo $$ > shell.pid; sleep 120 & echo $! > bg.pid; sleep 120"}),
        )],
    ));
    let mut child = setup
        .command()
        .args(["--agent", "swe", "--prompt", "wait a long time"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let openmanus = i32::try_from(child.id().unwrap()).unwrap();
    // The confined bash writes its PID namespace's numbers: seen from here, they are others.
    let shell: i32 = wait_for_file(&setup.workspace().join("shell.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let shell = agent_process::host_pid(shell, openmanus).unwrap();
    let background: i32 = wait_for_file(&setup.workspace().join("bg.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let background = agent_process::host_pid(background, openmanus).unwrap();
    assert!(alive(shell) && alive(background));

    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert_eq!(status.code(), Some(130), "stderr:\n{stderr}");

    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(shell) || alive(background)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(shell), "bash survived the cancel");
    assert!(!alive(background), "the background job survived the cancel");

    let output = Output {
        status,
        stdout: Vec::new(),
        stderr: stderr.clone().into_bytes(),
    };
    let (_, entries) = journal(&output, &setup.workspace()).await;
    let result = &entries[entries.len() - 2];
    assert_eq!(
        result["kind"], "result",
        "the run's end was recorded after everything of it"
    );
    assert_eq!(result["status"], "cancelled");
}

#[tokio::test]
async fn the_flow_gives_manus_the_tools_of_the_servers_in_mcp_json() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/mcp.json"),
        json!({"mcpServers": {"local": {"type": "stdio", "command": BIN, "args": ["mcp-server"]}}})
            .to_string(),
    )
    .unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "p1",
                "planning",
                json!({"command": "create", "plan_id": "plan_m", "title": "MCP",
                       "steps": ["[MANUS] say hello through the MCP bash"]}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "m1",
                "mcp_local_bash",
                json!({"command": "echo flow-over-mcp"}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call("m2", "terminate", json!({"status": "success"}))],
        ))
        .push_text("Summary: said hello.");
    let output = setup.run(&["flow", "--prompt", "Say hello."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("flow-over-mcp"), "{stderr}");
    // Manus's first request already offered the server's tools (connected at its first step).
    let manus_tools = server.requests()[1].body["tools"].to_string();
    assert!(manus_tools.contains("\"mcp_local_bash\""), "{manus_tools}");
    server.verify().unwrap();
}

#[tokio::test]
async fn a_flow_routes_tagged_steps_to_two_agents_and_marks_a_failing_step_blocked() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[agent]\nmax_steps = 2\n\n[runflow]\nmax_step_retries = 0\n",
            server.base_url()
        ),
    )
    .unwrap();
    server
        // The planner makes the plan through the planning tool.
        .push(Completion::tool_calls(
            None,
            [call(
                "p1",
                "planning",
                json!({"command": "create", "plan_id": "plan_x", "title": "Two agents",
                       "steps": ["[MANUS] write a.txt", "[SWE] list the files"]}),
            )],
        ))
        // Step 0, Manus: writes the file, then terminates.
        .push(Completion::tool_calls(
            None,
            [call(
                "m1",
                "python_execute",
                json!({"code": "open('a.txt','w').write('from manus\\n')"}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call("m2", "terminate", json!({"status": "success"}))],
        ))
        // Step 1, SWE: uses up its two steps without finishing -> blocked.
        .push(Completion::tool_calls(
            None,
            [call("s1", "bash", json!({"command": "ls"}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call("s2", "bash", json!({"command": "ls -a"}))],
        ))
        // The summary.
        .push_text("Summary: a.txt was written; listing the files did not finish.");

    let output = setup
        .run(&["flow", "--prompt", "Write a file, then list the files."])
        .await;
    let stderr = text(&output.stderr);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a blocked step: the flow did not complete\n{stderr}\n{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("a.txt")).unwrap(),
        "from manus\n"
    );
    assert!(
        stderr.contains("step 0 (manus, attempt 1): [MANUS] write a.txt"),
        "{stderr}"
    );
    assert!(
        stderr.contains("step 1 (swe, attempt 1): [SWE] list the files"),
        "{stderr}"
    );
    assert!(stderr.contains("step 0: completed"), "{stderr}");
    assert!(stderr.contains("step 1: blocked"), "{stderr}");
    assert!(stdout.contains("Summary: a.txt was written"), "{stdout}");
    server.verify().unwrap();

    // The executors' work is rendered like a normal run: the SWE step's bash call and its
    // observation (which lists the file Manus wrote), before the line that ends the step.
    let bash_at = stderr
        .find(r#"bash({"command":"ls"})"#)
        .unwrap_or_else(|| panic!("the bash call is not shown:\n{stderr}"));
    let observed_at = bash_at
        + stderr[bash_at..]
            .find("Observed output of cmd `bash` executed:")
            .unwrap_or_else(|| panic!("the bash observation is not shown:\n{stderr}"));
    let blocked_at = stderr.find("step 1: blocked").unwrap();
    assert!(observed_at < blocked_at, "{stderr}");
    assert!(
        stderr[observed_at..blocked_at].contains("a.txt"),
        "{stderr}"
    );
    assert!(stderr.contains("python_execute("), "{stderr}");

    // ... and journaled: every executor tool call finished, and the flow's own events.
    let (_, entries) = journal(&output, &setup.workspace()).await;
    let finished: Vec<&str> = entries
        .iter()
        .filter(|e| e["kind"] == "event" && e["event"]["type"] == "tool_call_finished")
        .map(|e| e["event"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        finished,
        ["python_execute", "terminate", "bash", "bash"],
        "{entries:#?}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "flow_event" && e["event"]["type"] == "step_finished")
    );

    // The SWE executor really ran bash: its requests offered bash, Manus's offered python.
    let requests = server.requests();
    let tools = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(tools(0), ["planning"]);
    assert!(tools(1).contains(&"python_execute".to_owned()));
    assert!(tools(3).contains(&"bash".to_owned()));
    assert_eq!(server.request_count(), 6);
}

#[tokio::test]
async fn interactive_mode_keeps_the_conversation_and_the_shell_between_tasks() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "bash",
                json!({"command": "mkdir -p sub && cd sub && export FOO=bar"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Moved into sub.".into()),
            [call("t1", "terminate", json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "c2",
                "bash",
                json!({"command": "echo foo=$FOO dir=$(basename $(pwd))"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Checked.".into()),
            [call("t2", "terminate", json!({"status": "success"}))],
        ));
    let mut child = setup
        .command()
        .args(["--agent", "swe", "-i"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let stdin = child.stdin.as_mut().unwrap();
        stdin
            .write_all(b"go into sub\ncheck where you are\n\n")
            .await
            .unwrap();
    }
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("foo=bar dir=sub"),
        "the shell kept its directory and variables:\n{stderr}"
    );
    assert_eq!(
        text(&output.stdout).lines().collect::<Vec<_>>(),
        ["Moved into sub.", "Checked."]
    );
    // The second task's request carried the first task's conversation.
    let requests = server.requests();
    let second_task = requests[2]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert!(second_task >= 2, "both tasks are in the conversation");
    server.verify().unwrap();
}

#[tokio::test]
async fn json_mode_prints_events_and_a_result_line_and_agent_sections_apply() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{0}\"\nmax_attempts = 1\n\n[llm.swe]\nmodel = \"swe-model\"\nmax_tokens = 77\n",
            server.base_url()
        ),
    )
    .unwrap();
    server.push(Completion::tool_calls(
        Some("All done.".into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
    let output = setup
        .run(&["--agent", "swe", "--json", "--prompt", "nothing"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "run_started");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["answer"], "All done.");
    // A machine value, and the words beside it.
    assert_eq!(result["status"], "finished");
    assert_eq!(result["status_text"], "finished (special tool `terminate`)");
    assert!(lines.iter().any(|l| l["type"] == "tool_call_finished"));
    // [llm.swe] took effect for the SWE agent.
    let body = &server.requests()[0].body;
    assert_eq!(body["model"], "swe-model");
    assert_eq!(body["max_tokens"], 77);
}

#[tokio::test]
async fn a_second_ctrl_c_exits_at_once_and_still_kills_every_tool_process() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    // The command ignores SIGINT and SIGTERM, so the clean cancel has to wait for its grace.
    server.push(Completion::tool_calls(
        None,
        [call(
            "c1",
            "bash",
            json!({"command": "trap '' TERM INT; echo $$ > stubborn.pid; sleep 300"}),
        )],
    ));
    let mut child = setup
        .command()
        .args(["--agent", "swe", "--prompt", "be stubborn"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let shell: i32 = wait_for_file(&setup.workspace().join("stubborn.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    // The confined shell wrote its PID namespace's number.
    let openmanus = i32::try_from(child.id().unwrap()).unwrap();
    let shell = agent_process::host_pid(shell, openmanus).unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    // Wait for the first press to be seen before the second one.
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("interrupted") {
        let mut line = String::new();
        let read = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::io::AsyncBufReadExt::read_line(&mut stderr, &mut line),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(
            read > 0,
            "openmanus closed stderr without reporting the interrupt:\n{seen}"
        );
        seen.push_str(&line);
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(shell) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(shell),
        "the stubborn shell survived the second Ctrl-C"
    );
}

#[tokio::test]
async fn openmanus_mcp_runs_the_mcp_agent_on_our_own_mcp_server() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    // The server's bash is confined to the server's directory by default.
    let elsewhere = tempfile::tempdir_in("/var/tmp").unwrap();
    let outside = elsewhere.path().join("outside.txt");
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "mcp_server_bash",
                json!({"command": format!("echo via-mcp; echo x > {} || echo outside-refused", outside.display())}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "c1b",
                "mcp_server_browser_use",
                json!({"action": "go_to_url", "url": "data:text/html,<title>over-mcp</title>"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("The server answered.".into()),
            [call(
                "c2",
                "mcp_server_terminate",
                json!({"status": "success"}),
            )],
        ));
    // No --command: the stdio server is this program's own `mcp-server`.
    let output = setup.run(&["mcp", "-p", "Use the server's bash."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("via-mcp"),
        "the server's bash ran:\n{stderr}"
    );
    assert!(
        stderr.contains("outside-refused") && !outside.exists(),
        "the server's bash wrote outside its directory:\n{stderr}"
    );
    assert_eq!(text(&output.stdout).trim(), "The server answered.");
    let browsed = server.requests()[2].body["messages"].to_string();
    assert!(
        browsed.contains("Navigated to data:text/html,<title>over-mcp</title>"),
        "the server's browser_use ran:\n{browsed}"
    );
    let tools: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        tools,
        [
            "mcp_server_bash",
            "mcp_server_browser_use",
            "mcp_server_str_replace_editor",
            "mcp_server_terminate"
        ]
    );
    server.verify().unwrap();
    // The server's Chromium ended with the server.
    assert_no_chromium_left(&setup).await;
}

/// Waits up to twenty seconds for every Chromium this test's program started (its profile is
/// in the test's own temporary directory) to be gone; other tests' browsers do not count.
async fn assert_no_chromium_left(setup: &Setup) {
    let ours = format!("{}/openmanus-chromium-", setup.tmp().display());
    let chromium = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("cmdline"))
                    .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&ours))
            })
            .count()
    };
    for _ in 0..400 {
        if chromium() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} Chromium processes remain", chromium());
}

#[tokio::test]
async fn the_browser_agent_browses_and_answers() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let page = "data:text/html,<title>Prices</title><p>Tea: 3 euros</p><button>Buy</button>";
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "browser_use",
                json!({"action": "go_to_url", "url": page}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Tea costs 3 euros.".into()),
            [call("c2", "terminate", json!({"status": "success"}))],
        ));
    let output = setup
        .run(&["--agent", "browser", "--prompt", "How much is tea?"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "Tea costs 3 euros.");
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"].as_array().unwrap().len(),
        2,
        "browser_use and terminate"
    );
    // The second step's prompt carries the page's state.
    let prompt = requests[1].body["messages"].to_string();
    assert!(prompt.contains("Title: Prices"), "{prompt}");
    assert!(prompt.contains("[0]<button>Buy</button>"), "{prompt}");
    server.verify().unwrap();
    assert_no_chromium_left(&setup).await;
}

#[tokio::test]
async fn manus_gets_the_tools_of_the_servers_in_mcp_json() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/mcp.json"),
        json!({"mcpServers": {"local": {"type": "stdio", "command": BIN, "args": ["mcp-server"]},
                              "broken": {"type": "stdio", "command": "/no/such/mcp-server"}}})
        .to_string(),
    )
    .unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "mcp_local_bash",
                json!({"command": "echo from-mcp-json"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c2", "terminate", json!({"status": "success"}))],
        ));
    let output = setup.run(&["--prompt", "Use the MCP bash."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("MCP server skipped") && stderr.contains("broken"),
        "a server that fails is a warning:\n{stderr}"
    );
    assert!(stderr.contains("from-mcp-json"), "{stderr}");
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(
        tools.contains("\"mcp_local_bash\"") && tools.contains("\"python_execute\""),
        "{tools}"
    );
}

#[tokio::test]
async fn a_hung_mcp_server_holds_the_start_only_for_the_startup_wait_and_is_stopped() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    setup.append_config("[mcp]\nstartup_wait_secs = 2\nconnect_timeout_secs = 600\n");
    // A server that starts and never answers the handshake: a sleep this test can find by its
    // command line.
    let marker = format!("600.{}", std::process::id());
    std::fs::write(
        setup.dir.path().join("config/mcp.json"),
        json!({"mcpServers": {"hung": {"type": "stdio", "command": "sleep", "args": [marker]}}})
            .to_string(),
    )
    .unwrap();
    server.push(Completion::tool_calls(
        Some("Done.".into()),
        [call("c1", "terminate", json!({"status": "success"}))],
    ));
    let began = Instant::now();
    let output = setup.run(&["--prompt", "Finish."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // Before, the run waited for the server's whole connect timeout (here ten minutes).
    assert!(
        began.elapsed() < Duration::from_secs(300),
        "{:?}",
        began.elapsed()
    );
    assert!(stderr.contains("still connecting"), "{stderr}");
    // The server's process did not outlive the run (it was sent SIGKILL before the program
    // exited; the kernel may take a moment to finish it).
    let needle = format!("sleep {marker}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !agent_process::processes_with(&needle).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = agent_process::processes_with(&needle);
    assert!(left.is_empty(), "the hung server still runs: {left:?}");
}

#[tokio::test]
async fn the_runflow_switch_adds_data_analysis_to_the_flow() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[runflow]\nuse_data_analysis_agent = true\nmax_step_retries = 0\n",
            server.base_url()
        ),
    )
    .unwrap();
    // The planner makes a one-step plan for DataAnalysis, which terminates at once.
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "p1",
                "planning",
                json!({"command": "create", "plan_id": "p", "title": "Chart it",
                                            "steps": ["[DATA_ANALYSIS] chart the sales"]}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Charted.".into()),
            [call("d1", "terminate", json!({"status": "success"}))],
        ))
        .push_text("Summary: charted.");
    let output = setup.run(&["flow", "--prompt", "Chart the sales."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("step 0 (data_analysis, attempt 1)"),
        "{stderr}"
    );
    let planner = server.requests()[0].body.to_string();
    assert!(
        planner.contains("DATA_ANALYSIS"),
        "the planner is told about the DataAnalysis executor"
    );
    let executor_tools = server.requests()[1].body["tools"].to_string();
    assert!(
        executor_tools.contains("data_visualization")
            && executor_tools.contains("visualization_preparation")
    );
}

#[tokio::test]
async fn use_sandbox_runs_the_tools_inside_bubblewrap() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[sandbox]\nuse_sandbox = true\nmemory_limit = \"1g\"\ntimeout = 60\n",
            server.base_url()
        ),
    )
    .unwrap();
    let planted = format!("/etc/openmanus-planted-{}", std::process::id());
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "bash",
                json!({"command": format!("echo in > inside.txt; echo out > {planted}")}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Tried.".into()),
            [call("c2", "terminate", json!({"status": "success"}))],
        ));
    let output = setup
        .run(&["--agent", "swe", "--prompt", "write two files"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(
        !Path::new(&planted).exists(),
        "the sandbox kept the write out of /etc"
    );
    assert!(stderr.contains("Read-only file system"), "{stderr}");
}

#[tokio::test]
async fn the_sandbox_agent_works_inside_the_sandbox_and_ignores_daytona() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[sandbox]\nwork_dir = \"/workspace\"\n\n[daytona]\ndaytona_api_key = \"dtn-unused\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "sandbox_shell",
                json!({"action": "execute_command", "blocking": true,
                       "command": "pwd; echo made-inside > inside.txt; touch /etc/nope 2>/dev/null || echo etc-is-read-only"}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "c2",
                "sandbox_files",
                json!({"action": "read_file", "file_path": "inside.txt"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done inside.".into()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));
    let output = setup
        .run(&["--agent", "sandbox", "--prompt", "work in the sandbox"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[daytona] is ignored"), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "Done inside.");
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("inside.txt")).unwrap(),
        "made-inside\n"
    );
    let observation = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap();
    let result: Value =
        serde_json::from_str(observation.split_once("executed:\n").unwrap().1).unwrap();
    assert_eq!(result["output"], "/workspace\netc-is-read-only");
    assert_eq!(result["exit_code"], 0);
    let read = server.requests()[2].body["messages"].to_string();
    assert!(read.contains("made-inside"), "{read}");
    server.verify().unwrap();
}

#[tokio::test]
async fn agent_mcp_is_the_mcp_agent_on_our_own_server() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "mcp_server_bash",
                json!({"command": "echo via-agent-mcp"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Answered over MCP.".into()),
            [call(
                "c2",
                "mcp_server_terminate",
                json!({"status": "success"}),
            )],
        ));
    let output = setup
        .run(&["--agent", "mcp", "--prompt", "Use the server's bash."])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "Answered over MCP.");
    let observed = server.requests()[1].body["messages"].to_string();
    assert!(observed.contains("via-agent-mcp"), "{observed}");
    server.verify().unwrap();
}

#[tokio::test]
async fn mcp_server_over_sse_serves_openmanus_mcp_over_sse() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut server_process = Command::new(BIN)
        .args(["mcp-server", "--transport", "sse", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server_process.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the server exited");
            if let Some((_, url)) = line.split_once("listening on ") {
                break url.trim().to_owned();
            }
        }
    })
    .await
    .expect("the SSE server did not start");
    assert!(url.ends_with("/sse"), "{url}");

    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "mcp_server_bash",
                json!({"command": "echo over-sse"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Answered over SSE.".into()),
            [call(
                "c2",
                "mcp_server_terminate",
                json!({"status": "success"}),
            )],
        ));
    let output = setup
        .run(&["mcp", "-c", "sse", "--server-url", &url, "-p", "Use bash."])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "Answered over SSE.");
    let observed = server.requests()[1].body["messages"].to_string();
    assert!(observed.contains("over-sse"), "{observed}");
    server.verify().unwrap();
    server_process.kill().await.unwrap();
}

#[tokio::test]
async fn agent_section_max_steps_applies_to_the_mcp_agent() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let config = setup.dir.path().join("config/config.toml");
    let mut text_config = std::fs::read_to_string(&config).unwrap();
    text_config.push_str("\n[agent]\nmax_steps = 1\n");
    std::fs::write(&config, text_config).unwrap();
    server.push(Completion::tool_calls(
        None,
        [call(
            "c1",
            "mcp_server_bash",
            json!({"command": "echo one-step-only"}),
        )],
    ));
    let output = setup
        .run(&[
            "--agent",
            "mcp",
            "--prompt",
            "Keep using the server's bash.",
        ])
        .await;
    let stderr = text(&output.stderr);
    // One step, then the budget of [agent] ends the run (the MCP agent's own is 20).
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("Terminated: Reached max steps (1)"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
    server.verify().unwrap();
}
