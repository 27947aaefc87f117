//! [`PythonInterpreter`]: a persistent Python interpreter in a child process, the engine behind
//! `python_execute` and any variant of it with another schema.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_core::CancellationToken;
use tokio::sync::Mutex;
use tracing::Instrument as _;
use tracing::{debug, info_span, warn};

use super::config::InterpreterConfig;
use super::error::PythonError;
use super::session::{Broken, Capture, Done, Session, Stop, describe_status};

/// The default cap on what is kept of each output stream (stdout, stderr) per call: 1 MiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The code ran to its end.
    Completed,
    /// The code raised an exception (or had a syntax error); `traceback` is Python's formatted
    /// traceback without the driver's frames. The interpreter and its state are kept.
    Raised {
        /// The formatted traceback, ending with the exception line.
        traceback: String,
    },
    /// The code raised `SystemExit` (`exit()`, `sys.exit(n)`). The driver caught it: the
    /// interpreter and its state are kept.
    Exited {
        /// `repr()` of the argument given to `exit`, `None` for a bare `exit()`.
        argument: Option<String>,
    },
    /// The time limit passed: the process group was killed and the state is gone.
    TimedOut {
        /// The limit that was hit.
        limit: Duration,
    },
    /// The interpreter process ended during the call (`os._exit`, a crash, a kill from outside):
    /// the state is gone.
    Crashed {
        /// `exit status 3`, `killed by signal SIGSEGV`, or `unknown exit status`.
        status: String,
    },
    /// The cancellation token fired: the process group was killed and the state is gone.
    Cancelled,
}

impl Outcome {
    /// True when the call ran to its end without an exception.
    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self, Self::Completed)
    }

    /// True when the interpreter was stopped, so variables and imports are gone.
    #[must_use]
    pub fn lost_state(&self) -> bool {
        matches!(
            self,
            Self::TimedOut { .. } | Self::Crashed { .. } | Self::Cancelled
        )
    }
}

/// Why a new interpreter replaced the previous one before a call, when no earlier result said so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Restart {
    /// The previous call was interrupted (its future dropped) before it finished.
    Interrupted,
    /// The interpreter had ended on its own since the previous call.
    Ended {
        /// `exit status 3`, `killed by signal SIGKILL`, or `unknown exit status`.
        status: String,
    },
    /// The previous call failed inside the tool ([`PythonError::Protocol`]).
    Failed,
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interrupted => {
                f.write_str("the previous call was interrupted before it finished")
            }
            Self::Ended { status } => write!(
                f,
                "the interpreter had stopped since the previous call ({status})"
            ),
            Self::Failed => f.write_str("the previous call failed inside the tool"),
        }
    }
}

/// The result of one call: how it ended and what the code printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// How the call ended.
    pub outcome: Outcome,
    /// What the code wrote to stdout (file descriptor 1, so subprocesses too), decoded lossily
    /// as UTF-8, at most the output limit.
    pub stdout: String,
    /// What the code wrote to stderr, likewise.
    pub stderr: String,
    /// Bytes of stdout beyond the output limit that were dropped.
    pub stdout_dropped: u64,
    /// Bytes of stderr beyond the output limit that were dropped.
    pub stderr_dropped: u64,
    /// The output limit in force (bytes per stream).
    pub output_limit: usize,
    /// Restarts that happened before this call ran and that no earlier result reported.
    pub restarts: Vec<Restart>,
}

impl Execution {
    fn new(outcome: Outcome, capture: Capture, restarts: Vec<Restart>) -> Self {
        let (stdout, stdout_cut) = decode(capture.stdout, capture.stdout_dropped > 0);
        let (stderr, stderr_cut) = decode(capture.stderr, capture.stderr_dropped > 0);
        Self {
            outcome,
            stdout,
            stderr,
            stdout_dropped: capture.stdout_dropped + stdout_cut,
            stderr_dropped: capture.stderr_dropped + stderr_cut,
            output_limit: capture.limit,
            restarts,
        }
    }
}

/// Decodes captured bytes lossily. When the capture was cut, a character split by the cut is
/// dropped too (its bytes are returned as the second value) instead of becoming U+FFFD.
fn decode(mut bytes: Vec<u8>, cut: bool) -> (String, u64) {
    let mut removed = 0;
    if cut
        && let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
    {
        removed = (bytes.len() - e.valid_up_to()) as u64;
        bytes.truncate(e.valid_up_to());
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    (text, removed)
}

#[derive(Debug, Default)]
struct State {
    session: Option<Session>,
    /// Restarts to report in the next result.
    pending: Vec<Restart>,
}

impl State {
    /// Stops the session (if any), collecting its last output frames into `capture`; returns how
    /// the interpreter ended.
    async fn tear_down(&mut self, capture: Option<&mut Capture>) -> String {
        let Some(session) = self.session.take() else {
            return "not running".to_owned();
        };
        // Should the caller's future be dropped during the tear-down, the result that says the
        // state is gone never reaches the model: the next call must say it.
        self.pending.push(Restart::Interrupted);
        let status = session.shut_down(capture).await;
        self.pending.pop();
        status.map_or_else(|| "unknown exit status".to_owned(), describe_status)
    }
}

/// A persistent Python interpreter: each [`PythonInterpreter::run`] executes code in the same
/// namespace (`__name__ == "__main__"`), so variables, functions and imports survive from one call
/// to the next, like the cells of a notebook.
///
/// * The interpreter is a `python3` child process (started on first use) running a small driver
///   program, in its own process group. Calls are serialised.
/// * Output: everything written to file descriptors 1 and 2 during the call (prints,
///   `os.system`, subprocesses, C extensions) is captured, up to the output limit per stream.
///   Output written while no call runs (by a background thread or process) is discarded. stdin is
///   `/dev/null`.
/// * A call that passes its time limit, or is cancelled, or whose future is dropped, kills the
///   whole process group; the next call starts a new interpreter with an empty namespace. So does
///   an interpreter that ended on its own (`os._exit`, a crash).
/// * `exit()` and `sys.exit()` are caught: the call fails but the interpreter and its state stay.
/// * [`PythonInterpreter::shutdown`] (and dropping the value) kills the group.
///
/// It is not a sandbox: the code runs with the rights of this process.
#[derive(Debug)]
pub struct PythonInterpreter {
    config: InterpreterConfig,
    state: Mutex<State>,
}

impl Default for PythonInterpreter {
    fn default() -> Self {
        Self::new()
    }
}

impl PythonInterpreter {
    /// An interpreter run with `python3` from `PATH`, in the current directory, keeping at most
    /// [`DEFAULT_OUTPUT_LIMIT`] bytes of each stream per call. Nothing starts until the first
    /// call.
    #[must_use]
    pub fn new() -> Self {
        Self {
            config: InterpreterConfig {
                program: PathBuf::from("python3"),
                cwd: None,
                output_limit: DEFAULT_OUTPUT_LIMIT,
                launcher: Vec::new(),
            },
            state: Mutex::new(State::default()),
        }
    }

    /// Uses `program` (a name looked up in `PATH`, or a path) as the interpreter. It must accept
    /// `-u -c CODE` like CPython 3.8 or later.
    #[must_use]
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.config.program = program.into();
        self
    }

    /// Starts interpreters in `dir` (the code's initial working directory).
    #[must_use]
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.cwd = Some(dir.into());
        self
    }

    /// Keeps at most `bytes` of each output stream per call (the rest is counted and dropped).
    #[must_use]
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.config.output_limit = bytes;
        self
    }

    /// Starts each interpreter through `launcher`: a program and its arguments, to which
    /// `PROGRAM -u -c DRIVER` is appended, e.g. a sandbox's `bwrap ... --` command line
    /// (`agent_sandbox::LocalSandbox::launcher`). Empty (the default) runs the interpreter
    /// directly. The launcher leads the process group that is killed on a timeout, so it must
    /// take everything it started down with it (bwrap does: its PID namespace dies).
    #[must_use]
    pub fn with_launcher(mut self, launcher: Vec<String>) -> Self {
        self.config.launcher = launcher;
        self
    }

    /// The launcher of each interpreter (empty: none).
    #[must_use]
    pub fn launcher(&self) -> &[String] {
        &self.config.launcher
    }

    /// The interpreter program.
    #[must_use]
    pub fn program(&self) -> &std::path::Path {
        &self.config.program
    }

    /// The output limit, in bytes per stream and call.
    #[must_use]
    pub fn output_limit(&self) -> usize {
        self.config.output_limit
    }

    /// Runs `code` in the persistent namespace, for at most `timeout` (start-up of a new
    /// interpreter not included), stopping early when `cancellation` fires.
    ///
    /// Dropping the returned future is safe: a call still running is killed with its process
    /// group and the next call starts a new interpreter (reported in [`Execution::restarts`]).
    ///
    /// # Errors
    ///
    /// [`PythonError`] when no interpreter could be started or the driver protocol broke.
    pub async fn run(
        &self,
        code: &str,
        timeout: Duration,
        cancellation: &CancellationToken,
    ) -> Result<Execution, PythonError> {
        let span = info_span!("python_execute", code_bytes = code.len());
        self.run_inner(code, timeout, cancellation)
            .instrument(span)
            .await
    }

    async fn run_inner(
        &self,
        code: &str,
        timeout: Duration,
        cancellation: &CancellationToken,
    ) -> Result<Execution, PythonError> {
        let limit = self.config.output_limit;
        let request = encode_request(code, limit)?;
        let mut guard = self.state.lock().await;
        let state = &mut *guard;
        if state.session.as_ref().is_some_and(|s| s.in_call) {
            // Noted first: the note must survive even if this future is dropped here.
            state.pending.push(Restart::Interrupted);
            state.tear_down(None).await;
        }
        let mut retried = false;
        loop {
            let session = match &mut state.session {
                Some(session) => session,
                slot @ None => tokio::select! {
                    started = Session::start(&self.config) => slot.insert(started?),
                    () = cancellation.cancelled() => {
                        let restarts = std::mem::take(&mut state.pending);
                        let capture = Capture::new(limit);
                        return Ok(Execution::new(Outcome::Cancelled, capture, restarts));
                    }
                },
            };
            let started = Instant::now();
            let mut capture = Capture::new(limit);
            let end = session
                .call(&request, timeout, cancellation, &mut capture)
                .await;
            debug!(
                elapsed_us = started.elapsed().as_micros(),
                "python call ended"
            );
            let outcome = match end {
                Ok(done) => match outcome_of(done, &mut capture) {
                    Ok(outcome) => outcome,
                    Err(e) => {
                        state.pending.push(Restart::Failed);
                        state.tear_down(None).await;
                        return Err(e);
                    }
                },
                Err(stop) => {
                    let status = state.tear_down(Some(&mut capture)).await;
                    match stop {
                        Stop::TimedOut => Outcome::TimedOut { limit: timeout },
                        Stop::Cancelled => Outcome::Cancelled,
                        Stop::Broken(Broken::Closed) if !capture.started && !retried => {
                            // It had died before this call reached it: run the code in a new one.
                            warn!(%status, "python interpreter had stopped; restarting it");
                            state.pending.push(Restart::Ended { status });
                            retried = true;
                            continue;
                        }
                        Stop::Broken(Broken::Closed) => Outcome::Crashed { status },
                        Stop::Broken(Broken::Protocol(e) | Broken::Driver(e)) => {
                            warn!(error = %e, "python driver protocol failure");
                            state.pending.push(Restart::Failed);
                            return Err(PythonError::Protocol(e));
                        }
                    }
                }
            };
            let restarts = std::mem::take(&mut state.pending);
            return Ok(Execution::new(outcome, capture, restarts));
        }
    }

    /// Kills the interpreter's process group and reaps it; the next call starts a new interpreter
    /// with an empty namespace, without reporting it as a restart. Called at the end of every
    /// agent run, so state persists within a run and never leaks into the next one.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        if state.session.is_some() {
            let status = state.tear_down(None).await;
            debug!(%status, "python interpreter shut down");
        }
        state.pending.clear();
    }
}

fn outcome_of(done: Done, capture: &mut Capture) -> Result<Outcome, PythonError> {
    capture.stdout_dropped += done.dropped_stdout;
    capture.stderr_dropped += done.dropped_stderr;
    Ok(match done.outcome.as_str() {
        "ok" => Outcome::Completed,
        "error" => Outcome::Raised {
            traceback: done.traceback.unwrap_or_default(),
        },
        "exit" => Outcome::Exited {
            argument: done.argument,
        },
        other => {
            return Err(PythonError::Protocol(format!("unknown outcome `{other}`")));
        }
    })
}

/// The request frame: a 4-byte big-endian length, then `{"code": ..., "cap": ...}`.
fn encode_request(code: &str, limit: usize) -> Result<Vec<u8>, PythonError> {
    let body = serde_json::to_vec(&serde_json::json!({ "code": code, "cap": limit }))
        .map_err(|e| PythonError::Protocol(e.to_string()))?;
    let length = u32::try_from(body.len())
        .map_err(|_| PythonError::Protocol("the code is larger than 4 GiB".to_owned()))?;
    let mut request = Vec::with_capacity(body.len() + 4);
    request.extend_from_slice(&length.to_be_bytes());
    request.extend_from_slice(&body);
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_in_the_middle_of_a_character_drops_the_character() {
        let bytes = "aé".as_bytes()[..2].to_vec();
        assert_eq!(decode(bytes, true), ("a".to_owned(), 1));
        let bytes = "aé".as_bytes()[..2].to_vec();
        assert_eq!(decode(bytes, false), ("a\u{fffd}".to_owned(), 0));
        assert_eq!(decode(vec![0xff, b'x'], true), ("\u{fffd}x".to_owned(), 0));
    }

    #[test]
    fn requests_are_length_prefixed_json() {
        let request = encode_request("print('é')", 7).unwrap();
        let body = &request[4..];
        assert_eq!(
            u32::from_be_bytes([request[0], request[1], request[2], request[3]]) as usize,
            body.len()
        );
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(value, serde_json::json!({"code": "print('é')", "cap": 7}));
    }
}
