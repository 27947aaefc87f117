//! The `bash` tool: its schema, and its behaviour through the real agent path (a scripted model
//! calls `bash`, then `terminate`; the observations stored in memory are checked word for word),
//! plus cancellation, dropped calls and cleanup through the tool collection.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, AgentEvent, CancellationToken, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::{Bash, Tool, ToolCollection, ToolContext};
use serde_json::{Value, json};
use tokio::time::{Instant, timeout};

/// The observation prefix of a `bash` result.
const OBSERVED: &str = "Observed output of cmd `bash` executed:\n";

/// A short timeout for the tests that need a command to outlive its call.
// Long enough for a quick command on a loaded 2-core machine; commands that must outlast it
// sleep 30 s or more.
const SHORT: Duration = Duration::from_secs(3);

const STILL_RUNNING: &str = "[still running (this call waited 3 s): send an empty command to \
wait for more output, or ctrl+c to interrupt it]";

fn cmd(command: &str) -> Value {
    json!({ "command": command })
}

/// Runs a ToolCallAgent whose model calls `bash` once per step with each of `calls`, then
/// `terminate`; returns the observations of the `bash` calls, in order.
async fn run_agent(bash: Bash, calls: &[Value]) -> Vec<String> {
    run_agent_with(bash, calls, |_| {}).await
}

/// [`run_agent`], with access to the agent before it runs (to subscribe to its events).
async fn run_agent_with(
    bash: Bash,
    calls: &[Value],
    before: impl FnOnce(&ToolCallAgent),
) -> Vec<String> {
    let model = Arc::new(ScriptedModel::new());
    for (i, args) in calls.iter().enumerate() {
        model.push_tool_calls("", [tool_call(&format!("b{i}"), "bash", &args.to_string())]);
    }
    model.push_tool_calls(
        "",
        [tool_call("end", "terminate", r#"{"status":"success"}"#)],
    );
    let steps = u32::try_from(calls.len()).unwrap() + 1;
    // The tool's own output limit is under test: no agent-level byte cap on top of it.
    let policies = agent_toolcall::Policies {
        max_observation_bytes: 0,
        ..agent_toolcall::Policies::default()
    };
    let mut agent = ToolCallAgent::new(model.clone())
        .with_tool(bash)
        .with_max_steps(steps)
        .with_policies(policies);
    before(&agent);
    timeout(
        Duration::from_secs(60),
        agent.run(Some("Use the shell.".into())),
    )
    .await
    .expect("the run finishes")
    .unwrap();
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool && m.name.as_deref() == Some("bash"))
        .map(|m| m.text().to_owned())
        .collect()
}

fn observed(text: &str) -> String {
    format!("{OBSERVED}{text}")
}

/// Whether the process `pid` is gone (or a zombie, which is dead but not yet reaped by init).
fn is_dead(pid: i32) -> bool {
    !agent_process::is_running(pid)
}

/// Waits (a short poll on /proc with a deadline: process exit has no event we can wait on from
/// here) until `pid` is dead.
async fn wait_dead(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    is_dead(pid)
}

/// The number after `key=` in `text`.
fn pid_after(text: &str, key: &str) -> i32 {
    let start = text.find(&format!("{key}=")).unwrap() + key.len() + 1;
    text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(Bash::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command in a bash shell that stays open between calls, so the working directory, exported variables and shell variables carry over from one call to the next. The result shows what the command printed on standard output, then what it printed on standard error after a `[stderr]` line, and ends with `[exit code: N]`.\n* Commands get no interactive input: their standard input is empty.\n* Start programs that keep running (servers, watchers, long jobs) in the background with their output sent to a file, for example `python3 -m http.server 8000 > server.log 2>&1 &`, then read the file.\n* A command still running when the call's time limit is reached returns its output so far and `[exit code: -1]`. Then call again with an empty `command` to wait for more output, or with `ctrl+c` to interrupt it. Another command is refused until it has finished.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {
                            "description": "The bash command to run. Send an empty string to wait for more output from a command that is still running, or `ctrl+c` to interrupt it.",
                            "type": "string"
                        },
                        "restart": {
                            "description": "Set to true to kill the shell and everything it started and begin again with a fresh one (working directory and variables are reset), before running `command`.",
                            "type": "boolean",
                            "default": false
                        }
                    },
                    "required": ["command"]
                }
            }
        })
    );
}

#[tokio::test]
async fn cwd_exports_and_variables_persist_across_calls() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub dir");
    std::fs::create_dir(&sub).unwrap();
    let observations = run_agent(
        Bash::new().with_cwd(dir.path()),
        &[
            cmd("pwd"),
            cmd("cd 'sub dir' && export GREETING=hello && count=41"),
            cmd("pwd; echo \"$GREETING $((count + 1))\"; bash -c 'echo child sees $GREETING'"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(&format!("{}\n[exit code: 0]", dir.path().display())),
            observed("[exit code: 0]"),
            observed(&format!(
                "{}\nhello 42\nchild sees hello\n[exit code: 0]",
                sub.display()
            )),
        ]
    );
}

#[tokio::test]
async fn exit_codes_stdout_and_stderr_are_all_reported() {
    let observations = run_agent(
        Bash::new(),
        &[
            cmd("echo out; echo err >&2; (exit 3)"),
            cmd("true"),
            cmd("printf 'no newline'; printf 'warning: careful\\n' >&2"),
            cmd("echo only-stderr >&2; false"),
            cmd("no-such-command-xyz"),
            cmd("printf 'a\\n\\n\\n'"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("out\n[stderr]\nerr\n[exit code: 3]"),
            observed("[exit code: 0]"),
            observed("no newline\n[stderr]\nwarning: careful\n[exit code: 0]"),
            observed("[stderr]\nonly-stderr\n[exit code: 1]"),
            observed(
                "[stderr]\n/dev/stdin: line 1: no-such-command-xyz: command not found\n\
                 [exit code: 127]",
            ),
            observed("a\n\n\n[exit code: 0]"),
        ]
    );
}

#[tokio::test]
async fn a_syntax_error_is_a_failure_that_keeps_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let observations = run_agent(
        Bash::new(),
        &[
            cmd(&format!("cd {}", quote(dir.path()))),
            cmd("if then"),
            cmd("echo \"unterminated"),
            cmd("pwd # a comment, and 'quotes' too"),
            cmd("cat; read line; echo \"read: $?\""),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("[exit code: 0]"),
            observed(
                "[stderr]\n/dev/stdin: line 1: syntax error near unexpected token `then'\n\
                 /dev/stdin: line 1: `if then'\n[exit code: 2]"
            ),
            observed(
                "[stderr]\n/dev/stdin: line 1: unexpected EOF while looking for matching `\"'\n\
                 [exit code: 2]"
            ),
            observed(&format!("{}\n[exit code: 0]", dir.path().display())),
            // Standard input is empty: nothing waits for input.
            observed("read: 1\n[exit code: 0]"),
        ]
    );
}

#[tokio::test]
async fn a_background_job_returns_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let observations = run_agent(
        Bash::new().with_timeout(SHORT).with_cwd(dir.path()),
        &[
            cmd("sleep 30 > /dev/null 2>&1 &"),
            cmd("(echo from the job; echo job error >&2) > job.log 2>&1 &"),
            cmd("wait $!; cat job.log"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("[exit code: 0]"),
            observed("[exit code: 0]"),
            observed("from the job\njob error\n[exit code: 0]"),
        ]
    );
}

/// A fifo in `dir` that a command can block on (`cat` it).
fn make_fifo(dir: &Path) -> std::path::PathBuf {
    let fifo = dir.join("gate");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    fifo
}

/// Makes the agent write `line` into `fifo` as soon as the first `bash` call has reported: a
/// command blocked on the fifo outlives that call, then goes on while the next call waits.
fn open_gate_after_first_call(fifo: &Path, line: &'static str) -> impl FnOnce(&ToolCallAgent) {
    let fifo = fifo.to_owned();
    move |agent| {
        let mut events = agent.base().events().subscribe();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if let AgentEvent::ToolCallFinished { call_id, .. } = event
                    && call_id == "b0"
                {
                    tokio::fs::write(&fifo, line).await.unwrap();
                    return;
                }
            }
        });
    }
}

#[tokio::test]
async fn a_command_outliving_its_call_reports_partial_output_then_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let observations = run_agent_with(
        Bash::new().with_timeout(Duration::from_secs(1)),
        &[
            cmd(&format!(
                "echo one; echo first warning >&2; cat {}; echo two; (exit 4)",
                quote(&fifo)
            )),
            cmd(""),
            cmd(""),
        ],
        open_gate_after_first_call(&fifo, "middle\n"),
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(
                "one\n[stderr]\nfirst warning\n[still running (this call waited 1 s): send an \
                 empty command to wait for more output, or ctrl+c to interrupt it]\n[exit code: -1]"
            ),
            observed("middle\ntwo\n[exit code: 4]"),
            observed("[no command is running]"),
        ]
    );
}

#[tokio::test]
async fn ctrl_c_interrupts_and_a_new_command_is_refused_meanwhile() {
    let observations = run_agent(
        Bash::new().with_timeout(SHORT),
        &[
            cmd("echo started; sleep 30; echo never"),
            cmd("echo hi"),
            cmd("ctrl+c"),
            cmd("echo after"),
            cmd("ctrl+c"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(&format!("started\n{STILL_RUNNING}\n[exit code: -1]")),
            observed(
                "Error: A command is still running. Call bash with an empty command to wait for \
                 its output, or with `ctrl+c` to interrupt it, before starting another command."
            ),
            // Like ctrl+c in a terminal: the rest of the line does not run.
            observed("[exit code: 130]"),
            observed("after\n[exit code: 0]"),
            observed("[no command is running]"),
        ]
    );
}

#[tokio::test]
async fn ctrl_c_reports_the_exit_code_of_the_interrupted_command() {
    let observations = run_agent(
        Bash::new().with_timeout(SHORT),
        &[
            cmd("sleep 30"),
            cmd("^C"),
            cmd("for i in 1 2 3; do echo \"i=$i\"; sleep 30; done; echo done"),
            cmd("Ctrl-C"),
            cmd("echo $((1 + 1))"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(&format!("{STILL_RUNNING}\n[exit code: -1]")),
            observed("[exit code: 130]"),
            observed(&format!("i=1\n{STILL_RUNNING}\n[exit code: -1]")),
            // The whole loop stops, not just its current `sleep`.
            observed("[exit code: 130]"),
            observed("2\n[exit code: 0]"),
        ]
    );
}

#[tokio::test]
async fn a_command_ignoring_ctrl_c_is_killed_by_a_second_one() {
    let observations = run_agent(
        Bash::new().with_timeout(SHORT),
        &[
            cmd("export KEPT=no; trap '' INT; echo stubborn; sleep 30"),
            cmd("ctrl+c"),
            cmd("ctrl+c"),
            cmd("echo \"KEPT=$KEPT\""),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(&format!("stubborn\n{STILL_RUNNING}\n[exit code: -1]")),
            observed(
                "[still running 3 s after ctrl+c: send ctrl+c again to kill it together with \
                 bash, or an empty command to keep waiting]\n[exit code: -1]"
            ),
            // bash dies of the SIGTERM (128 + 15).
            observed(
                "[the command ignored ctrl+c, so bash and everything it started were killed; the \
                 next command starts a new shell]\n[exit code: 143]"
            ),
            observed("KEPT=\n[exit code: 0]"),
        ]
    );
}

#[tokio::test]
async fn a_shell_that_exited_is_restarted_and_the_result_says_so() {
    let observations = run_agent(
        Bash::new(),
        &[
            cmd("export A=1; echo bye; exit 3"),
            cmd("echo \"A=$A\""),
            cmd("export B=2"),
            json!({"command": "echo \"B=$B\"", "restart": true}),
            json!({"command": "", "restart": true}),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("bye\n[bash exited; the next command starts a new shell]\n[exit code: 3]"),
            observed("bash had exited (code 3) and was restarted.\nA=\n[exit code: 0]"),
            observed("[exit code: 0]"),
            observed("bash was restarted.\nB=\n[exit code: 0]"),
            observed("bash was restarted."),
        ]
    );
}

#[tokio::test]
async fn a_command_that_ends_the_shell_after_its_call_is_reported_by_the_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let observations = run_agent_with(
        Bash::new().with_timeout(Duration::from_secs(1)),
        &[
            cmd(&format!("echo before; cat {}; exit 5", quote(&fifo))),
            cmd(""),
            cmd("echo new"),
        ],
        open_gate_after_first_call(&fifo, "after\n"),
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(
                "before\n[still running (this call waited 1 s): send an empty command to wait \
                 for more output, or ctrl+c to interrupt it]\n[exit code: -1]"
            ),
            observed("after\n[bash exited; the next command starts a new shell]\n[exit code: 5]"),
            observed("bash had exited (code 5) and was restarted.\nnew\n[exit code: 0]"),
        ]
    );
}

#[tokio::test]
async fn empty_command_and_ctrl_c_with_nothing_running() {
    let observations = run_agent(
        Bash::new(),
        &[
            cmd(""),
            cmd("   "),
            cmd("(sleep 0.2; echo late) & echo now"),
            cmd("wait"),
            cmd("CTRL+C"),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("[no command is running]"),
            observed("[no command is running]"),
            observed("now\n[exit code: 0]"),
            // The background job printed after the call that started it had returned.
            observed("late\n[exit code: 0]"),
            observed("[no command is running]"),
        ]
    );
}

#[tokio::test]
async fn output_beyond_the_limit_is_dropped_from_the_front_and_counted() {
    let observations = run_agent(
        Bash::new().with_output_limit(10),
        &[cmd(
            "printf '%s' 0123456789abcdefghij; printf 'xyz' >&2; printf '%s\\n' 123456789012 >&2",
        )],
    )
    .await;
    assert_eq!(
        observations,
        [observed(
            "[... 10 bytes dropped ...]\nabcdefghij\n[stderr]\n[... 6 bytes dropped ...]\n\
             456789012\n[exit code: 0]"
        )]
    );

    // A runaway command: 5 MB of output keep 1 MiB.
    let observations = run_agent(Bash::new(), &[cmd("yes | head -c 5000000")]).await;
    let text = observations[0].strip_prefix(OBSERVED).unwrap();
    let kept = 1024 * 1024;
    let expected_head = format!("[... {} bytes dropped ...]\n", 5_000_000 - kept);
    assert!(text.starts_with(&expected_head), "{}", &text[..80]);
    let body = text
        .strip_prefix(&expected_head)
        .unwrap()
        .strip_suffix("\n[exit code: 0]")
        .unwrap();
    assert_eq!(body.len(), kept - 1, "the final newline is not shown");
    assert!(body.split('\n').all(|line| line == "y"));
}

#[tokio::test]
async fn cleanup_at_the_end_of_a_run_leaves_no_process_behind() {
    let observations = run_agent(
        Bash::new().with_timeout(SHORT),
        &[
            cmd("sleep 300 & echo \"bg=$! shell=$$\""),
            cmd("sh -c 'echo \"fg=$$\"; exec sleep 300'"),
        ],
    )
    .await;
    let bg = pid_after(&observations[0], "bg");
    let shell = pid_after(&observations[0], "shell");
    let fg = pid_after(&observations[1], "fg");
    assert_eq!(
        observations[1],
        observed(&format!("fg={fg}\n{STILL_RUNNING}\n[exit code: -1]"))
    );
    // The run is over and the agent has called cleanup: every process is gone.
    for (what, pid) in [
        ("background job", bg),
        ("foreground child", fg),
        ("bash", shell),
    ] {
        assert!(wait_dead(pid).await, "{what} {pid} survived the cleanup");
    }
    // Nor is anything else left in the shell's process group.
    assert_eq!(agent_process::group_members(shell), Vec::<i32>::new());
}

#[tokio::test]
async fn dropping_the_tool_kills_its_process_group_and_cleanup_allows_reuse() {
    let mut tools = ToolCollection::new();
    tools.add_tool(Bash::new());
    let ctx = ToolContext::default();
    let out = tools
        .execute("bash", cmd("sleep 300 & echo \"bg=$!\""), &ctx)
        .await
        .unwrap();
    let bg = pid_after(&out.to_string(), "bg");

    // Cleanup kills the group; the tool starts a new shell on the next call.
    tools.cleanup_all().await;
    assert!(wait_dead(bg).await, "background job {bg} survived cleanup");
    let out = tools
        .execute("bash", cmd("sleep 300 & echo \"bg=$!\""), &ctx)
        .await
        .unwrap();
    let bg = pid_after(&out.to_string(), "bg");
    assert_eq!(out.to_string(), format!("bg={bg}\n[exit code: 0]"));
    assert!(!is_dead(bg), "the new shell's job runs");

    drop(tools);
    assert!(wait_dead(bg).await, "background job {bg} survived the drop");
}

#[tokio::test]
async fn a_dropped_call_interrupts_its_command_and_the_tool_stays_usable() {
    let mut tools = ToolCollection::new();
    tools.add_tool(Bash::new());
    let ctx = ToolContext::default();
    let warm = tools.execute("bash", cmd("true"), &ctx).await.unwrap();
    assert_eq!(warm.to_string(), "[exit code: 0]");

    let dropped = timeout(
        Duration::from_millis(300),
        tools.execute("bash", cmd("sleep 30"), &ctx),
    )
    .await;
    assert!(dropped.is_err(), "the call was still waiting when dropped");

    let next = tools.execute("bash", cmd("echo ok"), &ctx).await.unwrap();
    assert_eq!(
        next.to_string(),
        "The call that waited for the previous command was abandoned, so the command was \
         interrupted (exit code 130); its output is not shown.\nok\n[exit code: 0]"
    );
}

/// Issue 21: a cancelled run (server or A2A cancel, Ctrl-C) whose command waits on a background
/// job (`sleep 300 & wait`): SIGINT ends the `wait` but a background job ignores SIGINT; the
/// cancellation kills it (and a `setsid` child of the shell) at once, not when the session
/// closes, and the shell lives on.
#[tokio::test]
async fn cancellation_kills_the_background_jobs_of_the_interrupted_command() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let pids = dir.path().join("pids");
    let mut tools = ToolCollection::new();
    tools.add_tool(Bash::new());
    let tools = Arc::new(tools);
    let token = CancellationToken::new();
    let call = {
        let (tools, token) = (tools.clone(), token.clone());
        let command = format!(
            "sleep 300 & job=$!; setsid sleep 301 & solo=$!; echo \"$job $solo\" > {}; \
             echo started > {}; wait",
            quote(&pids),
            quote(&fifo)
        );
        tokio::spawn(async move {
            let ctx = ToolContext::new(token, "c1");
            tools.execute("bash", cmd(&command), &ctx).await
        })
    };
    let started = timeout(Duration::from_secs(10), tokio::fs::read_to_string(&fifo))
        .await
        .expect("the command starts")
        .unwrap();
    assert_eq!(started, "started\n");
    let pids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(|pid| pid.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|pid| agent_process::is_running(*pid)));
    token.cancel();
    let result = timeout(Duration::from_secs(30), call)
        .await
        .expect("a cancelled call returns promptly")
        .unwrap()
        .unwrap()
        .to_string();
    // One or two: the interrupt itself may end the `sleep 300` job before the sweep; what
    // matters is that none of them outlives the call (below).
    assert!(
        result.contains("[cancelled: the command was interrupted, and the 2 process(es) it left")
            || result
                .contains("[cancelled: the command was interrupted, and the 1 process(es) it left"),
        "{result}"
    );
    // Killed by the time the call returned (SIGKILL is immediate; the shell reaps its own
    // jobs, so wait for that).
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|pid| agent_process::is_running(*pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !pids.iter().any(|pid| agent_process::is_running(*pid)),
        "background jobs outlived the cancellation: {pids:?}"
    );
    // The shell survived and serves the next call (which may carry bash's own notices of the
    // killed jobs on its stderr).
    let next = tools
        .execute("bash", cmd("echo fine"), &ToolContext::default())
        .await
        .unwrap()
        .to_string();
    assert!(
        next.starts_with("fine\n") && next.ends_with("[exit code: 0]"),
        "{next}"
    );
    tools.cleanup_all().await;
}

#[tokio::test]
async fn cancellation_interrupts_the_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let mut tools = ToolCollection::new();
    tools.add_tool(Bash::new());
    let tools = Arc::new(tools);
    let token = CancellationToken::new();
    let call = {
        let (tools, token) = (tools.clone(), token.clone());
        let command = format!("echo partial; echo started > {}; sleep 30", quote(&fifo));
        tokio::spawn(async move {
            let ctx = ToolContext::new(token, "c1");
            tools.execute("bash", cmd(&command), &ctx).await
        })
    };
    // Reading the fifo returns once the command has written to it: it is running.
    let started = timeout(Duration::from_secs(10), tokio::fs::read_to_string(&fifo))
        .await
        .expect("the command starts")
        .unwrap();
    assert_eq!(started, "started\n");
    token.cancel();
    let result = timeout(Duration::from_secs(10), call)
        .await
        .expect("a cancelled call returns promptly")
        .unwrap()
        .unwrap();
    assert_eq!(
        result.to_string(),
        "partial\n[cancelled: the command was interrupted]\n[exit code: 130]"
    );

    // The shell survived and serves the next call.
    let next = tools
        .execute("bash", cmd("echo fine"), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(next.to_string(), "fine\n[exit code: 0]");

    // A call made after the cancellation does not run its command.
    let refused = tools
        .execute("bash", cmd("echo no"), &ToolContext::new(token, "c2"))
        .await
        .unwrap();
    assert_eq!(
        refused.to_string(),
        "Error: the run was cancelled; the command was not run"
    );
}
