//! One running interpreter process: start-up, the framed protocol of `driver.py`, and tear-down.
//!
//! The process is the leader of its own process group, supervised by agent-process (registered
//! process-wide, killed on drop), so killing the group also kills the subprocesses the code
//! started.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use agent_process::{GroupSignaller, ProcessGroup, Signal, Spawned};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tracing::{debug, warn};

use super::config::InterpreterConfig;
use super::error::PythonError;

/// The driver program, run with `python3 -u -c DRIVER`.
pub(super) const DRIVER: &str = include_str!("driver.py");

/// How long a new interpreter may take to report that it is ready.
pub(super) const STARTUP_LIMIT: Duration = Duration::from_secs(20);

/// How long tear-down waits for the frames still in flight and for the process to be reaped.
const TEARDOWN_LIMIT: Duration = Duration::from_secs(2);

/// The largest frame the driver may send: output chunks are at most 64 KiB, the done frame holds
/// a traceback clipped to the output limit (at most four bytes a character once encoded).
fn max_frame(limit: usize) -> usize {
    limit.saturating_mul(8).saturating_add(1 << 20)
}

/// A frame sent by the driver.
#[derive(Debug)]
pub(super) enum Frame {
    /// The driver is ready (JSON: pid and Python version).
    Ready(Vec<u8>),
    /// The cell has started running.
    Started,
    /// Bytes the code wrote to its stdout.
    Stdout(Vec<u8>),
    /// Bytes the code wrote to its stderr.
    Stderr(Vec<u8>),
    /// The cell is over (JSON, see [`Done`]).
    Done(Vec<u8>),
    /// The driver itself failed (a Python traceback).
    DriverFailure(Vec<u8>),
}

/// The end-of-cell report of the driver.
#[derive(Debug, Deserialize)]
pub(super) struct Done {
    /// `ok`, `error` or `exit`.
    pub outcome: String,
    /// The formatted traceback (`error`).
    #[serde(default)]
    pub traceback: Option<String>,
    /// `repr()` of the argument given to `exit` (`exit`; absent for a bare `exit()`).
    #[serde(default)]
    pub argument: Option<String>,
    /// Bytes of stdout the driver did not forward because of the output limit.
    #[serde(default)]
    pub dropped_stdout: u64,
    /// Bytes of stderr the driver did not forward because of the output limit.
    #[serde(default)]
    pub dropped_stderr: u64,
}

/// What the code printed during one call, capped at `limit` bytes per stream.
#[derive(Debug, Default)]
pub(super) struct Capture {
    pub limit: usize,
    pub started: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_dropped: u64,
    pub stderr_dropped: u64,
}

impl Capture {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    fn push(buffer: &mut Vec<u8>, dropped: &mut u64, limit: usize, data: &[u8]) {
        let room = limit.saturating_sub(buffer.len());
        let keep = data.len().min(room);
        buffer.extend_from_slice(&data[..keep]);
        *dropped = dropped.saturating_add((data.len() - keep) as u64);
    }

    /// Records an output frame; other frames are ignored.
    pub fn record(&mut self, frame: &Frame) {
        match frame {
            Frame::Started => self.started = true,
            Frame::Stdout(data) => {
                Self::push(&mut self.stdout, &mut self.stdout_dropped, self.limit, data);
            }
            Frame::Stderr(data) => {
                Self::push(&mut self.stderr, &mut self.stderr_dropped, self.limit, data);
            }
            _ => {}
        }
    }
}

/// Why a call ended without a done frame.
#[derive(Debug)]
pub(super) enum Broken {
    /// The frame channel closed: the driver is gone.
    Closed,
    /// Reading or writing the channel failed, or a frame made no sense.
    Protocol(String),
    /// The driver reported a failure of its own.
    Driver(String),
}

/// Reads frames from the driver; cancel-safe (a partly read frame stays in the buffer).
#[derive(Debug)]
struct FrameReader {
    inner: ChildStdout,
    buffer: Vec<u8>,
    max_frame: usize,
}

impl FrameReader {
    fn parse(&mut self) -> Result<Option<Frame>, Broken> {
        let Some(header) = self.buffer.get(..5) else {
            return Ok(None);
        };
        let kind = header[0];
        let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if length > self.max_frame {
            return Err(Broken::Protocol(format!(
                "a frame of {length} bytes exceeds the limit"
            )));
        }
        if self.buffer.len() < 5 + length {
            return Ok(None);
        }
        let payload = self.buffer[5..5 + length].to_vec();
        self.buffer.drain(..5 + length);
        Ok(Some(match kind {
            b'R' => Frame::Ready(payload),
            b'S' => Frame::Started,
            b'O' => Frame::Stdout(payload),
            b'E' => Frame::Stderr(payload),
            b'D' => Frame::Done(payload),
            b'X' => Frame::DriverFailure(payload),
            other => {
                return Err(Broken::Protocol(format!("unknown frame kind {other:#04x}")));
            }
        }))
    }

    /// The next frame; [`Broken::Closed`] at the end of the channel.
    async fn next(&mut self) -> Result<Frame, Broken> {
        loop {
            if let Some(frame) = self.parse()? {
                return Ok(frame);
            }
            self.buffer.reserve(64 * 1024);
            let read = self
                .inner
                .read_buf(&mut self.buffer)
                .await
                .map_err(|e| Broken::Protocol(format!("reading from the interpreter: {e}")))?;
            if read == 0 {
                return Err(Broken::Closed);
            }
        }
    }
}

/// The two ends of the protocol, apart from the child so both can be borrowed at once.
#[derive(Debug)]
struct Channel {
    requests: ChildStdin,
    frames: FrameReader,
}

impl Channel {
    /// Sends `request` and collects frames into `capture` until the done frame.
    async fn exchange(&mut self, request: &[u8], capture: &mut Capture) -> Result<Done, Broken> {
        let sent = async {
            self.requests.write_all(request).await?;
            self.requests.flush().await
        };
        if let Err(e) = sent.await {
            return Err(if e.kind() == io::ErrorKind::BrokenPipe {
                Broken::Closed
            } else {
                Broken::Protocol(format!("writing to the interpreter: {e}"))
            });
        }
        loop {
            match self.frames.next().await? {
                Frame::Done(payload) => {
                    return serde_json::from_slice(&payload)
                        .map_err(|e| Broken::Protocol(format!("unreadable done frame: {e}")));
                }
                Frame::DriverFailure(text) => {
                    return Err(Broken::Driver(String::from_utf8_lossy(&text).into_owned()));
                }
                frame => capture.record(&frame),
            }
        }
    }
}

/// Kills a process group when dropped while armed: a call whose future is dropped must not leave
/// the code running.
struct KillOnDrop {
    group: GroupSignaller,
    armed: bool,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.armed {
            debug!(
                group = self.group.pgid(),
                "python call dropped; killing its group"
            );
            self.group.signal(Signal::SIGKILL);
        }
    }
}

/// Why a call ended without the driver's report.
#[derive(Debug)]
pub(super) enum Stop {
    /// The channel broke or the driver failed.
    Broken(Broken),
    /// The time limit passed.
    TimedOut,
    /// The cancellation token fired.
    Cancelled,
}

/// A running interpreter.
#[derive(Debug)]
pub(super) struct Session {
    /// The interpreter's process group; dropping it kills the group.
    group: ProcessGroup,
    channel: Channel,
    /// True from the start of a call until its done frame: a session left in this state by a
    /// dropped call is unusable.
    pub in_call: bool,
}

impl Session {
    /// Starts `config.program` with the driver and waits for its ready frame.
    pub async fn start(config: &InterpreterConfig) -> Result<Self, PythonError> {
        let started = Instant::now();
        let mut command = match config.launcher.split_first() {
            Some((launcher, args)) => {
                let mut command = Command::new(launcher);
                command.args(args).arg(&config.program);
                command
            }
            None => Command::new(&config.program),
        };
        command
            .arg("-u")
            .arg("-c")
            .arg(DRIVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &config.cwd {
            command.current_dir(dir);
        }
        let spawn_error = |source: io::Error| PythonError::Spawn {
            program: config.program.display().to_string(),
            cwd: config.cwd.as_ref().map(|d| d.display().to_string()),
            source,
        };
        let Spawned {
            group,
            stdin,
            stdout,
            mut stderr,
        } = ProcessGroup::spawn("python", &mut command).map_err(spawn_error)?;
        let pid = group.pid();
        let (Some(requests), Some(frames)) = (stdin, stdout) else {
            return Err(spawn_error(io::Error::other("the child has no pipes")));
        };
        let mut session = Self {
            group,
            channel: Channel {
                requests,
                frames: FrameReader {
                    inner: frames,
                    buffer: Vec::new(),
                    max_frame: max_frame(config.output_limit),
                },
            },
            in_call: false,
        };
        let first = tokio::time::timeout(STARTUP_LIMIT, session.channel.frames.next()).await;
        let failure = match first {
            Ok(Ok(Frame::Ready(info))) => {
                debug!(
                    pid,
                    info = %String::from_utf8_lossy(&info),
                    elapsed_us = started.elapsed().as_micros(),
                    "python interpreter ready"
                );
                return Ok(session);
            }
            Ok(Ok(Frame::DriverFailure(text))) => String::from_utf8_lossy(&text).into_owned(),
            Ok(Ok(other)) => format!("unexpected first frame {other:?}"),
            Ok(Err(Broken::Closed)) => String::new(),
            Ok(Err(Broken::Protocol(e) | Broken::Driver(e))) => e,
            Err(_) => format!(
                "it did not answer within {} seconds",
                STARTUP_LIMIT.as_secs()
            ),
        };
        let status = session.finish().await;
        let mut diagnostics = Vec::new();
        if let Some(stderr) = stderr.as_mut() {
            let mut limited = stderr.take(8 * 1024);
            let _ =
                tokio::time::timeout(TEARDOWN_LIMIT, limited.read_to_end(&mut diagnostics)).await;
        }
        let diagnostics = String::from_utf8_lossy(&diagnostics).trim().to_owned();
        let detail = [
            failure,
            diagnostics,
            status.map(describe_status).unwrap_or_default(),
        ]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
        Err(PythonError::Startup {
            program: config.program.display().to_string(),
            detail,
        })
    }

    /// The interpreter's process id.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// Runs one cell. If the returned future is dropped before it completes, the process group is
    /// killed at once and [`Session::in_call`] stays set.
    pub async fn call(
        &mut self,
        request: &[u8],
        timeout: Duration,
        cancellation: &agent_core::CancellationToken,
        capture: &mut Capture,
    ) -> Result<Done, Stop> {
        self.in_call = true;
        let mut guard = KillOnDrop {
            group: self.group.signaller(),
            armed: true,
        };
        let end = tokio::select! {
            result = self.channel.exchange(request, capture) => result.map_err(Stop::Broken),
            () = tokio::time::sleep(timeout) => Err(Stop::TimedOut),
            () = cancellation.cancelled() => Err(Stop::Cancelled),
        };
        guard.armed = false;
        self.in_call = end.is_err();
        end
    }

    /// Kills the process group, collects the output frames still in flight into `capture`, and
    /// reaps the interpreter. Returns its exit status when it could be reaped.
    pub async fn shut_down(mut self, capture: Option<&mut Capture>) -> Option<ExitStatus> {
        self.group.kill();
        let drain = async {
            let mut sink = Capture::default();
            let capture = capture.unwrap_or(&mut sink);
            while let Ok(frame) = self.channel.frames.next().await {
                capture.record(&frame);
            }
        };
        if tokio::time::timeout(TEARDOWN_LIMIT, drain).await.is_err() {
            warn!(
                pid = self.pid(),
                "python output channel did not close after the kill"
            );
        }
        self.finish().await
    }

    /// Kills the group and waits (bounded) for the leader to be reaped.
    async fn finish(&mut self) -> Option<ExitStatus> {
        self.group.kill();
        match self.group.wait_timeout(TEARDOWN_LIMIT).await {
            Ok(Some(status)) => Some(status),
            Ok(None) => {
                warn!(pid = self.pid(), "could not reap the python interpreter");
                None
            }
            Err(_) => {
                warn!(
                    pid = self.pid(),
                    "python interpreter not reaped in time; left to tokio"
                );
                None
            }
        }
    }
}

/// `exit status 3` or `killed by signal SIGSEGV`.
pub(super) fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(signal) => match Signal::try_from(signal) {
            Ok(name) => format!("killed by signal {name}"),
            Err(_) => format!("killed by signal {signal}"),
        },
        None => status.to_string(),
    }
}
