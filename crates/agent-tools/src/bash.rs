//! `bash`: commands in a persistent shell, with their stdout, stderr and exit code.
//!
//! One `bash --noprofile --norc` per [`Bash`] instance, leader of its own process group, started
//! on the first call. See [`Bash`] for the behaviour and the exact layout of the results.

mod jobs;
mod session;
mod stream;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;
use tracing::{Instrument, debug, info_span};

use self::session::{InterruptOnDrop, Session, Wait};
use self::stream::Captured;
use crate::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const BASH: &str = "bash";

/// How long a call waits for its command by default before reporting it as still running.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How many bytes of each stream (stdout, stderr) a call keeps by default: the most recent ones.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

/// How long `ctrl+c` waits at most for the command to stop (never longer than the timeout).
const INTERRUPT_WAIT: Duration = Duration::from_secs(5);
/// How long a cancelled call waits after SIGINT before it kills the process group.
const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// How long a new command waits for the command of an abandoned call to stop after its SIGINT.
const ABANDONED_GRACE: Duration = Duration::from_secs(1);

const DESCRIPTION: &str = "Run a command in a bash shell that stays open between calls, so the \
working directory, exported variables and shell variables carry over from one call to the next. \
The result shows what the command printed on standard output, then what it printed on standard \
error after a `[stderr]` line, and ends with `[exit code: N]`.
* Commands get no interactive input: their standard input is empty.
* Start programs that keep running (servers, watchers, long jobs) in the background with their \
output sent to a file, for example `python3 -m http.server 8000 > server.log 2>&1 &`, then read \
the file.
* A command still running when the call's time limit is reached returns its output so far and \
`[exit code: -1]`. Then call again with an empty `command` to wait for more output, or with \
`ctrl+c` to interrupt it. Another command is refused until it has finished.";

const BUSY: &str = "A command is still running. Call bash with an empty command to wait for its \
output, or with `ctrl+c` to interrupt it, before starting another command.";

/// Arguments of `bash`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The bash command to run. Send an empty string to wait for more output from a command that
    /// is still running, or `ctrl+c` to interrupt it.
    pub command: String,
    /// Set to true to kill the shell and everything it started and begin again with a fresh one
    /// (working directory and variables are reset), before running `command`.
    #[serde(default)]
    pub restart: bool,
}

/// `bash`: runs commands in one persistent shell.
///
/// # The shell
///
/// The shell is `bash --noprofile --norc`, started on the first call in the directory given to
/// [`Bash::with_cwd`] (else the current one), in a process group of its own. The working
/// directory, the environment and shell variables persist across calls. Each command is sourced
/// by that shell from a quoted here-document (`builtin source /dev/stdin <<'DELIMITER'`), so it
/// runs verbatim: a syntax error is an ordinary failure (exit code 2, messages prefixed
/// `/dev/stdin: line N:` with N counted within the command) that leaves the shell alive, and a
/// command that reads its standard input gets end of file instead of hanging. The end of a
/// command is detected by a marker line with a per-command nonce that the shell prints after it,
/// on stdout with the exit status and on stderr, so both streams are complete when the result is
/// built; `cmd > log 2>&1 &` returns at once. Output is read by tasks as it arrives, and the call
/// is woken by them: there is no polling interval.
///
/// # Arguments
///
/// * `command`: the command. An empty (or blank) command waits for more output of the command that
///   is still running. `ctrl+c` (also `ctrl-c` or `^C`, any case) sends SIGINT to the process
///   group: the foreground program gets it with the default action, and a trap in bash ends the
///   rest of the command (a loop does not go on to its next iteration) with exit code 130 while
///   bash itself survives. Commands started with `&` ignore it, as in any non-interactive shell.
/// * `restart` (optional, default false): kill the shell and its whole process group, start a
///   fresh shell, then run `command` if it is not empty.
///
/// # Results
///
/// Everything is in [`ToolResult::output`]; an exit code other than 0 is not an error of the
/// tool. The output is these lines, in this order, each part present only when it applies:
///
/// ```text
/// bash had exited (code 3) and was restarted.  notes about the shell itself, one per line
/// [... 1234 bytes dropped ...]                 when stdout exceeded the output limit
/// {stdout}                                     as printed, less one final newline
/// [stderr]                                     when stderr is not empty
/// [... 99 bytes dropped ...]                   when stderr exceeded the output limit
/// {stderr}                                     as printed, less one final newline
/// [{status}]                                   when the command did not simply finish (below)
/// [exit code: N]                               last, whenever a command was waited for
/// ```
///
/// For example, `echo out; echo err >&2; false` gives `out\n[stderr]\nerr\n[exit code: 1]`:
///
/// ```
/// use agent_tools::{Bash, ToolCollection, ToolContext};
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut tools = ToolCollection::new();
/// tools.add_tool(Bash::new());
/// let ctx = ToolContext::default();
/// let run = |command: &str| tools.execute("bash", json!({ "command": command }), &ctx);
/// assert_eq!(run("cd /tmp && x=41").await.unwrap().to_string(), "[exit code: 0]");
/// assert_eq!(
///     run("echo \"$PWD $((x + 1))\"; echo err >&2; false").await.unwrap().to_string(),
///     "/tmp 42\n[stderr]\nerr\n[exit code: 1]"
/// );
/// tools.cleanup_all().await;
/// # });
/// ```
///
///
/// * A command that finishes within the timeout ([`Bash::with_timeout`], default
///   [`DEFAULT_TIMEOUT`]) ends with `[exit code: N]`, N being `$?`.
/// * A command still running at the timeout is left running. The result holds its output so far,
///   `[still running (this call waited {t} s): send an empty command to wait for more output, or
///   ctrl+c to interrupt it]` (`{t}` as in `0.5` or `120`) and `[exit code: -1]`. A later call
///   with an empty command waits up to the timeout again and returns what was printed since, and
///   the exit code once the command has finished. A new non-empty command meanwhile is refused
///   with a [`ToolError::Failure`] (rendered `Error: A command is still running. ...`) asking for
///   an empty command or `ctrl+c`.
/// * `ctrl+c` waits up to 5 s (at most the timeout) for the command to stop and reports its exit
///   code, 130 when it was interrupted; if the command has not stopped 200 ms after the SIGINT, a
///   second SIGINT follows (the first may have reached a command between `fork` and `exec`). If
///   it is still running after that, the status is `[still running {t} s after ctrl+c: send
///   ctrl+c again to kill it together with bash, or an empty command to keep waiting]` with
///   `[exit code: -1]`; a second `ctrl+c` then kills the whole process group (SIGTERM, then
///   SIGKILL): `[the command ignored ctrl+c, so bash and everything it started were killed; the
///   next command starts a new shell]` and bash's exit code (143 after SIGTERM).
/// * A command that makes bash exit (`exit 3`) ends with `[bash exited; the next command starts a
///   new shell]` and its exit code. The next call starts a new shell and its result begins with
///   `bash had exited (code 3) and was restarted.`; the same happens when bash died between
///   calls. With `restart`, the result begins with `bash was restarted.` (and is only that line
///   when `command` is empty).
/// * An empty command or `ctrl+c` when nothing is running returns what background jobs printed
///   since the last call, then `[no command is running]` and no exit code.
/// * Output printed by background jobs between two calls is reported by the next call.
/// * Each stream keeps at most [`DEFAULT_OUTPUT_LIMIT`] bytes per call (set with
///   [`Bash::with_output_limit`]), the most recent ones; how many earlier bytes were dropped is
///   said in the first line of the stream's part.
///
/// # Cancellation, dropping, cleanup
///
/// * When the [`ToolContext::cancellation`] token fires during a call, the command gets SIGINT
///   (twice, as for `ctrl+c`), and if it has not stopped after 1 s, the whole process group is
///   killed. The status is `[cancelled: the command was interrupted]` (the shell lives on; what
///   the command left running — background jobs, which ignore SIGINT — is killed, and the status
///   then says how many processes) or
///   `[cancelled: the command did not stop on ctrl+c, so bash and everything it started were
///   killed]`. A call made once the token has fired runs nothing and fails with `the run was
///   cancelled; the command was not run`.
/// * If the future of a call is dropped while it waits, the command gets SIGINT at once. The next
///   call that runs a command waits up to 1 s for it to stop (its output is discarded and a note
///   says so), or kills the shell and starts a new one.
/// * [`TypedTool::cleanup`] (called at the end of every agent run) sends SIGTERM to the process
///   group, then SIGKILL, reaps bash, and leaves the tool ready to start a new shell. Dropping the
///   tool kills the process group too. Background jobs are members of the group and die with it
///   (unless they left it, with `setsid` for instance).
pub struct Bash {
    cwd: Option<PathBuf>,
    timeout: Duration,
    output_limit: usize,
    launcher: Vec<String>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    session: Option<Session>,
    /// bash exited during the last call, with this code; the next call says so.
    exited: Option<i32>,
}

impl fmt::Debug for Bash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bash")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("output_limit", &self.output_limit)
            .field("launcher", &self.launcher)
            .finish_non_exhaustive()
    }
}

impl Default for Bash {
    fn default() -> Self {
        Self::new()
    }
}

impl Bash {
    /// A tool with the default timeout and output limit, whose shell starts in the current
    /// directory.
    #[must_use]
    pub fn new() -> Self {
        Self {
            cwd: None,
            timeout: DEFAULT_TIMEOUT,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            launcher: Vec::new(),
            state: Mutex::new(State::default()),
        }
    }

    /// The directory each new shell starts in.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// How long a call waits for its command before reporting it as still running.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many bytes of each stream a call keeps at most (the most recent ones).
    #[must_use]
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes;
        self
    }

    /// Starts each shell through `launcher`: a program and its arguments, to which
    /// `bash --noprofile --norc` is appended, e.g. a sandbox's `bwrap ... --` command line
    /// (`agent_sandbox::LocalSandbox::launcher`). Empty (the default) runs `bash` directly.
    ///
    /// The launcher is the leader of the process group that is signalled and killed, so it must
    /// take everything it started down with it when killed (bwrap does: its PID namespace dies).
    /// A launcher that does not forward SIGINT (bwrap) turns an interrupt (`ctrl+c`, a
    /// cancellation) into the end of the shell; the next call starts a new one.
    #[must_use]
    pub fn with_launcher(mut self, launcher: Vec<String>) -> Self {
        self.launcher = launcher;
        self
    }

    /// The launcher of each new shell (empty: none).
    #[must_use]
    pub fn launcher(&self) -> &[String] {
        &self.launcher
    }

    /// The directory each new shell starts in, if one was set.
    #[must_use]
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The per-call timeout.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The session, started if there is none.
    async fn session<'a>(&self, state: &'a mut State) -> Result<&'a mut Session, ToolError> {
        if state.session.is_none() {
            let session = Session::start(self.cwd.as_deref(), self.output_limit, &self.launcher)
                .await
                .map_err(|e| ToolError::failure(format!("could not start bash: {e}")))?;
            state.session = Some(session);
        }
        state
            .session
            .as_mut()
            .ok_or_else(|| ToolError::failure("could not start bash"))
    }

    /// Replaces a shell that exited (during the last call or since) with a new one. A shell
    /// that died while running a command is kept when `keep_running` (an empty command or
    /// `ctrl+c` then reports that command's last output and the exit).
    async fn replace_dead_shell(
        &self,
        state: &mut State,
        keep_running: bool,
        report: &mut Report,
    ) -> Result<(), ToolError> {
        let code = match (state.exited.take(), &state.session) {
            (Some(code), _) => Some(code),
            (None, Some(session)) if keep_running && session.running.is_some() => None,
            (None, Some(session)) => session.exit_code(),
            (None, None) => None,
        };
        if let Some(code) = code {
            if let Some(session) = state.session.take() {
                session.shutdown().await;
            }
            self.session(state).await?;
            report
                .notes
                .push(format!("bash had exited (code {code}) and was restarted."));
        }
        Ok(())
    }

    /// A non-empty command.
    async fn run(
        &self,
        state: &mut State,
        command: &str,
        ctx: &ToolContext,
        mut report: Report,
    ) -> Result<ToolResult, ToolError> {
        if let Some(session) = state.session.as_mut()
            && let Some(running) = &session.running
        {
            if !running.awaited {
                return Err(ToolError::failure(BUSY));
            }
            // The call that waited for it was dropped, which sent SIGINT.
            match session
                .interrupt(true, Instant::now() + ABANDONED_GRACE, None)
                .await
            {
                Wait::Done(code) => {
                    session.take_output();
                    session.finish();
                    report.notes.push(format!(
                        "The call that waited for the previous command was abandoned, so the \
                         command was interrupted (exit code {code}); its output is not shown."
                    ));
                }
                Wait::Exited(code) => {
                    if let Some(session) = state.session.take() {
                        session.shutdown().await;
                    }
                    report
                        .notes
                        .push(format!("bash had exited (code {code}) and was restarted."));
                }
                Wait::TimedOut | Wait::Cancelled => {
                    if let Some(session) = state.session.take() {
                        session.shutdown().await;
                    }
                    report.notes.push(
                        "The previous command did not stop after the call waiting for it was \
                         abandoned, so bash was killed and restarted."
                            .to_owned(),
                    );
                }
            }
        }
        let mut retried = false;
        loop {
            let session = self.session(state).await?;
            let guard = InterruptOnDrop::new(session.signaller());
            match session.begin(command).await {
                Ok(()) => return self.wait_for_command(state, guard, ctx, report).await,
                Err(error) => {
                    // bash is gone: it no longer reads its input.
                    guard.disarm();
                    let code = session.exit_code();
                    if let Some(session) = state.session.take() {
                        session.shutdown().await;
                    }
                    if retried {
                        return Err(ToolError::failure(format!(
                            "could not send the command to bash: {error}"
                        )));
                    }
                    retried = true;
                    let code = code.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
                    report
                        .notes
                        .push(format!("bash had exited (code {code}) and was restarted."));
                }
            }
        }
    }

    /// An empty command: wait for more output of the running command.
    async fn follow(
        &self,
        state: &mut State,
        ctx: &ToolContext,
        mut report: Report,
    ) -> Result<ToolResult, ToolError> {
        match state.session.as_mut() {
            Some(session) if session.running.is_some() => {
                if let Some(running) = session.running.as_mut() {
                    running.awaited = true;
                }
                let guard = InterruptOnDrop::new(session.signaller());
                self.wait_for_command(state, guard, ctx, report).await
            }
            session => {
                if let Some(session) = session {
                    report.set_output(session.take_output());
                }
                report.trailer.push("[no command is running]".to_owned());
                Ok(report.into_result())
            }
        }
    }

    /// `ctrl+c`.
    async fn interrupt(
        &self,
        state: &mut State,
        ctx: &ToolContext,
        mut report: Report,
    ) -> Result<ToolResult, ToolError> {
        let Some(session) = state.session.as_mut() else {
            report.trailer.push("[no command is running]".to_owned());
            return Ok(report.into_result());
        };
        let Some(running) = session.running.as_mut() else {
            report.set_output(session.take_output());
            report.trailer.push("[no command is running]".to_owned());
            return Ok(report.into_result());
        };
        if running.interrupted {
            let code = session.kill().await;
            report.set_output(session.take_output());
            state.session = None;
            report.trailer.push(
                "[the command ignored ctrl+c, so bash and everything it started were killed; the \
                 next command starts a new shell]"
                    .to_owned(),
            );
            report.exit_code(code.unwrap_or(-1));
            return Ok(report.into_result());
        }
        running.interrupted = true;
        running.awaited = true;
        let guard = InterruptOnDrop::new(session.signaller());
        let wait = self.timeout.min(INTERRUPT_WAIT);
        report.still_running = Some(format!(
            "[still running {} after ctrl+c: send ctrl+c again to kill it together with bash, or \
             an empty command to keep waiting]",
            seconds(wait)
        ));
        self.wait_for(state, wait, true, guard, ctx, report).await
    }

    async fn wait_for_command(
        &self,
        state: &mut State,
        guard: InterruptOnDrop,
        ctx: &ToolContext,
        report: Report,
    ) -> Result<ToolResult, ToolError> {
        self.wait_for(state, self.timeout, false, guard, ctx, report)
            .await
    }

    /// Waits up to `limit` for the running command (interrupting it first if `interrupt`) and
    /// reports.
    async fn wait_for(
        &self,
        state: &mut State,
        limit: Duration,
        interrupt: bool,
        guard: InterruptOnDrop,
        ctx: &ToolContext,
        mut report: Report,
    ) -> Result<ToolResult, ToolError> {
        let Some(session) = state.session.as_mut() else {
            guard.disarm();
            return Err(ToolError::failure("bash is not running"));
        };
        let deadline = Instant::now() + limit;
        let cancel = Some(&ctx.cancellation);
        let outcome = if interrupt {
            session.interrupt(false, deadline, cancel).await
        } else {
            session.wait(deadline, cancel).await
        };
        guard.disarm();
        if let Some(running) = session.running.as_mut() {
            running.awaited = false;
        }
        debug!(?outcome, "bash command");
        match outcome {
            Wait::Done(code) => {
                report.set_output(session.take_output());
                session.finish();
                report.exit_code(code);
            }
            Wait::TimedOut => {
                report.set_output(session.take_output());
                let line = report.still_running.take().unwrap_or_else(|| {
                    format!(
                        "[still running (this call waited {}): send an empty command to wait for \
                         more output, or ctrl+c to interrupt it]",
                        seconds(limit)
                    )
                });
                report.trailer.push(line);
                report.exit_code(-1);
            }
            Wait::Exited(code) => {
                report.set_output(session.take_output());
                if let Some(session) = state.session.take() {
                    session.shutdown().await;
                }
                state.exited = Some(code);
                report
                    .trailer
                    .push("[bash exited; the next command starts a new shell]".to_owned());
                report.exit_code(code);
            }
            Wait::Cancelled => {
                match session
                    .interrupt(false, Instant::now() + CANCEL_GRACE, None)
                    .await
                {
                    Wait::Done(code) => {
                        // What the command left running (a background job survives the
                        // SIGINT: `sleep 300 & wait`) goes with the cancelled run; the shell
                        // itself lives on for the next task.
                        let killed = session.kill_left_behind();
                        report.set_output(session.take_output());
                        session.finish();
                        report.trailer.push(if killed == 0 {
                            "[cancelled: the command was interrupted]".to_owned()
                        } else {
                            format!(
                                "[cancelled: the command was interrupted, and the {killed} process(es) it left \
                                 running were killed]"
                            )
                        });
                        report.exit_code(code);
                    }
                    _ => {
                        let code = session.kill().await;
                        report.set_output(session.take_output());
                        state.session = None;
                        report.trailer.push(
                            "[cancelled: the command did not stop on ctrl+c, so bash and \
                             everything it started were killed]"
                                .to_owned(),
                        );
                        report.exit_code(code.unwrap_or(-1));
                    }
                }
            }
        }
        Ok(report.into_result())
    }
}

/// What the model asked for.
enum Request<'a> {
    Empty,
    Interrupt,
    Run(&'a str),
}

impl<'a> Request<'a> {
    fn parse(command: &'a str) -> Self {
        let trimmed = command.trim();
        if trimmed.is_empty() {
            Self::Empty
        } else if ["ctrl+c", "ctrl-c", "^c"]
            .iter()
            .any(|keys| trimmed.eq_ignore_ascii_case(keys))
        {
            Self::Interrupt
        } else {
            Self::Run(command)
        }
    }
}

/// The parts of a result, rendered in the documented order.
#[derive(Debug, Default)]
struct Report {
    notes: Vec<String>,
    stdout: Captured,
    stderr: Captured,
    /// The status line to use if the wait times out (the default one when `None`).
    still_running: Option<String>,
    trailer: Vec<String>,
}

impl Report {
    fn set_output(&mut self, (stdout, stderr): (Captured, Captured)) {
        self.stdout = stdout;
        self.stderr = stderr;
    }

    fn exit_code(&mut self, code: i32) {
        self.trailer.push(format!("[exit code: {code}]"));
    }

    fn render(&self) -> String {
        let mut lines: Vec<&str> = self.notes.iter().map(String::as_str).collect();
        let dropped = |captured: &Captured| {
            (captured.dropped > 0).then(|| format!("[... {} bytes dropped ...]", captured.dropped))
        };
        let text = |captured: &'_ Captured| -> Option<String> {
            let text = captured.text.strip_suffix('\n').unwrap_or(&captured.text);
            (!text.is_empty()).then(|| text.to_owned())
        };
        let stdout_dropped = dropped(&self.stdout);
        let stdout_text = text(&self.stdout);
        let stderr_dropped = dropped(&self.stderr);
        let stderr_text = text(&self.stderr);
        lines.extend(stdout_dropped.as_deref());
        lines.extend(stdout_text.as_deref());
        if stderr_dropped.is_some() || stderr_text.is_some() {
            lines.push("[stderr]");
        }
        lines.extend(stderr_dropped.as_deref());
        lines.extend(stderr_text.as_deref());
        lines.extend(self.trailer.iter().map(String::as_str));
        lines.join("\n")
    }

    fn into_result(self) -> ToolResult {
        ToolResult::success(self.render())
    }
}

/// `0.3 s`, `120 s`.
fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

#[async_trait]
impl TypedTool for Bash {
    type Args = BashArgs;

    fn name(&self) -> &str {
        BASH
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: BashArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let span = info_span!("bash", call_id = %ctx.call_id);
        async {
            if ctx.cancellation.is_cancelled() {
                return Err(ToolError::failure(
                    "the run was cancelled; the command was not run",
                ));
            }
            let mut state: MutexGuard<'_, State> = self.state.lock().await;
            let state = &mut *state;
            let mut report = Report::default();
            if args.restart {
                if let Some(session) = state.session.take() {
                    session.shutdown().await;
                }
                state.exited = None;
                report.notes.push("bash was restarted.".to_owned());
            }
            let request = Request::parse(&args.command);
            let keep_running = !matches!(request, Request::Run(_));
            self.replace_dead_shell(state, keep_running, &mut report)
                .await?;
            match request {
                Request::Empty if args.restart => Ok(report.into_result()),
                Request::Empty => self.follow(state, ctx, report).await,
                Request::Interrupt => self.interrupt(state, ctx, report).await,
                Request::Run(command) => self.run(state, command, ctx, report).await,
            }
        }
        .instrument(span)
        .await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        let mut state = self.state.lock().await;
        if let Some(session) = state.session.take() {
            session.shutdown().await;
        }
        state.exited = None;
        Ok(())
    }
}
