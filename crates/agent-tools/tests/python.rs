//! `python_execute` through the real agent path: a scripted model calls the tool, and the tests
//! read the observations the ToolCallAgent stored. Every test runs a real `python3`.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, CancellationToken, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::python::NO_OUTPUT;
use agent_tools::{PythonExecute, Tool, ToolContext};
use serde_json::json;

const OBSERVED: &str = "Observed output of cmd `python_execute` executed:\n";
const GONE: &str = "variables and imports from earlier calls are gone";

/// Runs an agent whose model calls `python_execute` once per step with each of `codes`, then
/// `terminate`; returns the agent and the observation of each python call.
async fn run_cells(tool: PythonExecute, codes: &[&str]) -> (ToolCallAgent, Vec<String>) {
    let model = Arc::new(ScriptedModel::new());
    script(&model, codes);
    let mut agent = ToolCallAgent::new(model).with_tool(tool);
    agent.run(Some("Compute things.".into())).await.unwrap();
    let observations = python_observations(&agent);
    assert_eq!(observations.len(), codes.len(), "one observation per call");
    (agent, observations)
}

fn script(model: &ScriptedModel, codes: &[&str]) {
    for (i, code) in codes.iter().enumerate() {
        let arguments = json!({ "code": code }).to_string();
        model.push_tool_calls(
            "",
            [tool_call(&format!("c{i}"), "python_execute", &arguments)],
        );
    }
    model.push_tool_calls(
        "",
        [tool_call("end", "terminate", r#"{"status":"success"}"#)],
    );
}

fn python_observations(agent: &ToolCallAgent) -> Vec<String> {
    agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool && m.name.as_deref() == Some("python_execute"))
        .map(|m| m.text().to_owned())
        .collect()
}

fn observed(text: &str) -> String {
    format!("{OBSERVED}{text}")
}

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits (bounded) until `conn`'s peer closes it, which happens when the peer process dies.
fn wait_for_close(conn: &mut TcpStream) -> bool {
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).is_ok()
}

/// Accepts one connection on `listener` and reads the pid the code sends first (blocking).
fn accept_pid(listener: &TcpListener) -> (TcpStream, u32) {
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line).unwrap();
    (conn, line.trim().parse().unwrap())
}

/// Code that connects to `port`, sends its pid, then loops forever.
fn pid_then_loop(port: u16) -> String {
    format!(
        "import os, socket\n\
         conn = socket.create_connection(('127.0.0.1', {port}))\n\
         conn.sendall(f'{{os.getpid()}}\\n'.encode())\n\
         while True:\n    pass"
    )
}

// ---- schema ---------------------------------------------------------------------------------

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(PythonExecute::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "python_execute",
                "description": "Run Python 3 code in a persistent interpreter on this machine. Only what the code prints comes back (standard output, standard error and the traceback of an uncaught exception); the value of the last expression is not shown, so print() every result you need. Variables, functions and imports stay defined for later calls, like cells of a notebook. A call that runs longer than 5 seconds is stopped, and the interpreter then restarts with nothing defined.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "code": {
                            "type": "string",
                            "description": "The Python code to run. Use print() to show any value you need to see."
                        }
                    },
                    "required": ["code"]
                }
            }
        })
    );
}

#[test]
fn the_description_states_the_configured_time_limit() {
    let tool = PythonExecute::new().with_timeout(Duration::from_millis(1500));
    assert!(
        tool.to_param()
            .function
            .description
            .contains("longer than 1.5 seconds"),
    );
}

// ---- output ---------------------------------------------------------------------------------

#[tokio::test]
async fn printed_output_is_the_observation() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "print('hello')",
            "x = 1",
            "print('héllo → 世界 🎉')\nprint()\nprint('end', end='')",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("hello"),
            observed(NO_OUTPUT),
            observed("héllo → 世界 🎉\n\nend"),
        ]
    );
}

#[tokio::test]
async fn stderr_gets_its_own_section() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "import sys\nprint('out')\nprint('err', file=sys.stderr)",
            "import sys\nsys.stderr.write('only err\\n')",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("out\n[stderr]\nerr"),
            observed("[stderr]\nonly err"),
        ]
    );
}

#[tokio::test]
async fn output_of_subprocesses_is_captured_in_order() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "import os\nos.system('echo hi')",
            "import os, subprocess\nprint('a')\nos.system('echo b')\nprint('c')\n\
             subprocess.run(['sh', '-c', 'echo oops >&2'])",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [observed("hi"), observed("a\nb\nc\n[stderr]\noops")]
    );
}

#[tokio::test]
async fn output_of_c_code_and_forked_workers_is_captured() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            // C stdio writes straight to file descriptor 1 (`-u` makes it unbuffered).
            "import ctypes\nctypes.CDLL(None).printf(b'from C\\n')",
            "import multiprocessing as mp\n\
             def square(n):\n    print('worker', n, flush=True)\n    return n * n\n\
             with mp.get_context('fork').Pool(2) as pool:\n    \
             results = pool.map(square, [3])\n\
             print(results)",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [observed("from C"), observed("worker 3\n[9]")]
    );
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_replaced() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &["import sys\nsys.stdout.buffer.write(b'\\xff\\xfeok\\n')\nprint('\\udcff')"],
    )
    .await;
    assert_eq!(observations, [observed("\u{fffd}\u{fffd}ok\n\\udcff")]);
}

#[tokio::test]
async fn output_beyond_the_limit_is_dropped_and_counted() {
    let (_, observations) = run_cells(
        PythonExecute::new().with_output_limit(10),
        &[
            "print('x' * 25)",
            "import sys\nprint('a' + 'é' * 6, end='')\nsys.stdout.flush()\nsys.stderr.write('y' * 12)",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(
                "xxxxxxxxxx\n[16 more bytes of stdout were dropped: the limit is 10 bytes per call]"
            ),
            // 'é' is two bytes: the fifth one is cut in half and dropped whole.
            observed(
                "aéééé\n[4 more bytes of stdout were dropped: the limit is 10 bytes per call]\n\
                 [stderr]\nyyyyyyyyyy\n\
                 [2 more bytes of stderr were dropped: the limit is 10 bytes per call]"
            ),
        ]
    );
}

// ---- state ----------------------------------------------------------------------------------

#[tokio::test]
async fn variables_functions_and_imports_persist_across_calls() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "import json\nx = {'a': [1, 2]}\ndef double(n):\n    return 2 * n",
            "print(json.dumps(x), double(21))",
            "if __name__ == '__main__':\n    print('main block ran', __name__)",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(NO_OUTPUT),
            observed(r#"{"a": [1, 2]} 42"#),
            observed("main block ran __main__"),
        ]
    );
}

#[tokio::test]
async fn state_is_reset_between_runs() {
    let model = Arc::new(ScriptedModel::new());
    script(&model, &["secret = 7\nprint(secret)"]);
    let mut agent = ToolCallAgent::new(model.clone()).with_tool(PythonExecute::new());
    agent.run(Some("first".into())).await.unwrap();
    agent.base_mut().reset_state().unwrap();
    agent.base_mut().memory.clear();

    script(&model, &["secret"]);
    agent.run(Some("second".into())).await.unwrap();
    assert_eq!(
        python_observations(&agent),
        [observed(
            "Error: Execution failed.\n\
             Traceback (most recent call last):\n  \
             File \"<cell 1>\", line 1, in <module>\n    secret\n\
             NameError: name 'secret' is not defined"
        )],
        "a new run starts with a new interpreter, and no restart note"
    );
}

// ---- failures -------------------------------------------------------------------------------

#[tokio::test]
async fn an_exception_keeps_earlier_output_and_shows_the_traceback() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "print('before')\ndef check(n):\n    if n > 2:\n        raise ValueError(f'too big: {n}')\ncheck(1)",
            "import sys\nprint('partial')\nprint('warned', file=sys.stderr)\ncheck(3)",
            "x = (",
            "print('still alive')",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("before"),
            observed(
                "Error: Execution failed.\npartial\n[stderr]\nwarned\n\
                 Traceback (most recent call last):\n  \
                 File \"<cell 2>\", line 4, in <module>\n    check(3)\n  \
                 File \"<cell 1>\", line 4, in check\n    raise ValueError(f'too big: {n}')\n\
                 ValueError: too big: 3"
            ),
            observed(
                "Error: Execution failed.\n  File \"<cell 3>\", line 1\n    x = (\n        ^\n\
                 SyntaxError: '(' was never closed"
            ),
            observed("still alive"),
        ]
    );
}

#[tokio::test]
async fn exit_fails_the_call_but_keeps_the_interpreter() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "kept = 'yes'\nprint('bye')\nimport sys\nsys.exit(3)",
            "exit()",
            "raise SystemExit('fatal: no input')",
            "print(kept)\nprint(input())",
        ],
    )
    .await;
    let kept = "The interpreter caught it and is still running: variables and imports are kept.";
    assert_eq!(
        observations,
        [
            observed(&format!(
                "Error: Execution failed: the code called exit(3). {kept}\nbye"
            )),
            observed(&format!(
                "Error: Execution failed: the code called exit(). {kept}"
            )),
            observed(&format!(
                "Error: Execution failed: the code called exit('fatal: no input'). {kept}"
            )),
            observed(
                "Error: Execution failed.\nyes\nTraceback (most recent call last):\n  \
                 File \"<cell 4>\", line 2, in <module>\n    print(input())\n           ^^^^^^^\n\
                 EOFError: EOF when reading a line"
            ),
        ],
        "stdin is empty, even after exit() closed sys.stdin"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_interpreter_and_the_next_call_starts_afresh() {
    let (_, observations) = run_cells(
        PythonExecute::new().with_timeout(Duration::from_millis(500)),
        &[
            "x = 1\nprint(x)",
            "import time\nprint('looping', flush=True)\ntime.sleep(0.05)\nwhile True:\n    pass",
            "x",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("1"),
            observed(&format!(
                "Error: Execution timeout after 0.5 seconds. The interpreter was restarted: {GONE}.\nlooping"
            )),
            observed(
                "Error: Execution failed.\nTraceback (most recent call last):\n  \
                 File \"<cell 1>\", line 1, in <module>\n    x\n\
                 NameError: name 'x' is not defined"
            ),
        ]
    );
}

#[tokio::test]
async fn a_crashed_interpreter_is_reported_and_replaced() {
    let (_, observations) = run_cells(
        PythonExecute::new(),
        &[
            "y = 5",
            "import os\nos._exit(3)",
            "print('y' in globals())",
            "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(NO_OUTPUT),
            observed(&format!(
                "Error: Execution failed: the Python interpreter stopped during the call \
                 (exit status 3). The interpreter was restarted: {GONE}."
            )),
            observed("False"),
            observed(&format!(
                "Error: Execution failed: the Python interpreter stopped during the call \
                 (killed by signal SIGSEGV). The interpreter was restarted: {GONE}."
            )),
        ]
    );
}

#[tokio::test]
async fn an_interpreter_that_died_between_calls_is_replaced_with_a_note() {
    let tool = PythonExecute::new();
    let ctx = ToolContext::default();
    let first = tool
        .execute(json!({"code": "import os\nprint(os.getpid())"}), &ctx)
        .await
        .unwrap();
    let pid: i32 = first.to_string().parse().unwrap();
    // Something outside kills the interpreter while no call runs.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let second = tool
        .execute(json!({"code": "print('ran once')"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        second.to_string(),
        format!(
            "ran once\n[Note: the interpreter had stopped since the previous call (killed by \
             signal SIGKILL), so a new interpreter was started: {GONE}.]"
        )
    );
    assert!(
        !process_exists(pid.unsigned_abs()),
        "the dead one was reaped"
    );
    tool.cleanup().await.unwrap();
}

#[tokio::test]
async fn an_interpreter_that_cannot_start_is_a_tool_problem() {
    let (_, observations) = run_cells(
        PythonExecute::new().with_interpreter("/nonexistent/python3"),
        &["print(1)"],
    )
    .await;
    assert_eq!(
        observations,
        [
            "Error: ⚠️ Tool 'python_execute' encountered a problem: could not start the Python \
          interpreter `/nonexistent/python3`: No such file or directory (os error 2)"
        ]
    );

    let ctx = ToolContext::default();
    let not_python = PythonExecute::new().with_interpreter("false");
    let error = not_python
        .execute(json!({"code": "print(1)"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the Python interpreter `false` failed to start: exit status 1"
    );
    let no_dir = PythonExecute::new().with_cwd("/nonexistent/dir");
    let error = no_dir
        .execute(json!({"code": "print(1)"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "could not start the Python interpreter `python3` in `/nonexistent/dir`: No such file \
         or directory (os error 2)"
    );
}

#[tokio::test]
async fn the_working_directory_is_configurable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "from the file").unwrap();
    let (_, observations) = run_cells(
        PythonExecute::new().with_cwd(dir.path()),
        &["print(open('data.txt').read())"],
    )
    .await;
    assert_eq!(observations, [observed("from the file")]);
}

// ---- processes ------------------------------------------------------------------------------

/// Code that connects to `port` from the interpreter and from a background subprocess (keeping
/// both connections open), then prints the interpreter's pid.
fn connect_code(port: u16) -> String {
    format!(
        "import os, socket, subprocess, sys\n\
         conn = socket.create_connection(('127.0.0.1', {port}))\n\
         child = subprocess.Popen([sys.executable, '-c', \
         'import socket, time\\nc = socket.create_connection((\"127.0.0.1\", {port}))\\nprint(\"up\", flush=True)\\ntime.sleep(600)'], \
         stdout=subprocess.PIPE)\n\
         child.stdout.readline()\n\
         print(os.getpid())"
    )
}

#[tokio::test]
async fn cleanup_kills_the_interpreter_and_its_subprocesses() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = connect_code(port);
    let (agent, observations) = run_cells(PythonExecute::new(), &[&code]).await;
    // The run is over, so the agent has cleaned up its tools.
    let pid: u32 = observations[0]
        .strip_prefix(OBSERVED)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        !process_exists(pid),
        "the interpreter was killed and reaped"
    );
    let (mut from_interpreter, _) = listener.accept().unwrap();
    let (mut from_subprocess, _) = listener.accept().unwrap();
    assert!(wait_for_close(&mut from_interpreter));
    assert!(
        wait_for_close(&mut from_subprocess),
        "the background subprocess died with the process group"
    );
    drop(agent);
}

#[tokio::test]
async fn dropping_the_tool_kills_the_interpreter_and_its_subprocesses() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tool = PythonExecute::new();
    let result = tool
        .execute(
            json!({ "code": connect_code(port) }),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert!(!result.is_error(), "{result}");
    drop(tool);
    let (mut from_interpreter, _) = listener.accept().unwrap();
    let (mut from_subprocess, _) = listener.accept().unwrap();
    assert!(wait_for_close(&mut from_interpreter));
    assert!(wait_for_close(&mut from_subprocess));
}

#[tokio::test]
async fn dropping_a_call_mid_way_kills_it_and_leaves_the_tool_usable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tool = PythonExecute::new().with_timeout(Duration::from_secs(600));
    let ctx = ToolContext::default();
    tool.execute(json!({"code": "kept = 1"}), &ctx)
        .await
        .unwrap();

    let code = pid_then_loop(port);
    let accept = tokio::task::spawn_blocking(move || accept_pid(&listener));
    let (mut conn, pid) = tokio::select! {
        result = tool.execute(json!({ "code": code }), &ctx) => panic!("the loop ended: {result:?}"),
        conn = accept => conn.unwrap(),
    };
    // The call's future is gone; its interpreter must be too.
    assert!(wait_for_close(&mut conn), "the dropped call was killed");

    let next = tool
        .execute(json!({"code": "print('kept' in globals())"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        next.to_string(),
        format!(
            "False\n[Note: the previous call was interrupted before it finished, so a new \
             interpreter was started: {GONE}.]"
        )
    );
    assert!(!process_exists(pid), "the killed interpreter was reaped");
    let again = tool
        .execute(json!({"code": "print(2)"}), &ctx)
        .await
        .unwrap();
    assert_eq!(again.to_string(), "2", "the note is given once");
    tool.cleanup().await.unwrap();
}

#[tokio::test]
async fn cancellation_stops_a_running_call() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tool = PythonExecute::new().with_timeout(Duration::from_secs(600));
    let token = CancellationToken::new();
    let ctx = ToolContext::new(token.clone(), "c1");
    let code = format!(
        "import os, socket\nprint('working')\n\
         conn = socket.create_connection(('127.0.0.1', {port}))\n\
         conn.sendall(f'{{os.getpid()}}\\n'.encode())\nwhile True:\n    pass"
    );
    let canceller = async {
        let accepted = tokio::task::spawn_blocking(move || accept_pid(&listener))
            .await
            .unwrap();
        token.cancel();
        accepted
    };
    let (result, (mut conn, pid)) =
        tokio::join!(tool.execute(json!({ "code": code }), &ctx), canceller);
    // What the code printed just before the cancel may or may not have reached the tool yet.
    let result = result.unwrap().to_string();
    let headline = format!("Error: Execution cancelled. The interpreter was stopped: {GONE}.");
    assert!(
        result == headline || result == format!("{headline}\nworking"),
        "{result}"
    );
    assert!(wait_for_close(&mut conn));
    assert!(!process_exists(pid), "the cancelled interpreter was reaped");
    let after = tool
        .execute(json!({"code": "print('fresh')"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(
        after.to_string(),
        "fresh",
        "the cancel was reported, so no note"
    );
    tool.cleanup().await.unwrap();
}

#[tokio::test]
async fn cancelling_the_run_answers_the_call_and_cleans_up() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let model = Arc::new(ScriptedModel::new());
    let code = pid_then_loop(port);
    script(&model, &[&code]);
    let mut agent = ToolCallAgent::new(model).with_tool(PythonExecute::new());
    let token = agent.base().cancellation_token();
    let canceller = async {
        let accepted = tokio::task::spawn_blocking(move || accept_pid(&listener))
            .await
            .unwrap();
        token.cancel();
        accepted
    };
    let (outcome, (mut conn, pid)) = tokio::join!(agent.run(Some("loop".into())), canceller);
    assert!(matches!(
        outcome.unwrap().status,
        agent_core::RunStatus::Cancelled
    ));
    assert_eq!(
        python_observations(&agent),
        ["Error: Tool 'python_execute' did not complete: the run was cancelled"]
    );
    assert!(wait_for_close(&mut conn));
    assert!(!process_exists(pid), "cleanup reaped the interpreter");
}
