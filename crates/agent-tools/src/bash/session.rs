//! One `bash` process in its own process group, with tasks that read its pipes as output arrives.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::CancellationToken;
use agent_process::{ExitWatch, GroupSignaller, ProcessGroup, Signal, Spawned};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};
use tracing::{debug, warn};

use super::stream::{Captured, Marker, StreamCapture, marker_printfs};

/// How long after the stdout marker the stderr marker may take (it only goes missing when the
/// command redirected the shell's stderr for good, e.g. `exec 2>file`).
const STDERR_LAG: Duration = Duration::from_millis(250);
/// How long to wait for the pipes to drain after bash exited (a background job may hold them).
const EXIT_DRAIN: Duration = Duration::from_millis(250);
/// How long bash and its group get after SIGTERM, and after SIGKILL, to go away.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// When a SIGINT has not stopped the command after this long, it is sent once more: the first one
/// may have landed between `fork` and `exec` of a command, where the shell's handler (not the
/// default action) caught it, while the shell defers its own trap until that command ends.
const INTERRUPT_RESEND: Duration = Duration::from_millis(200);
/// Read size of the pipe readers.
const READ_CHUNK: usize = 64 * 1024;

/// How a wait for the running command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// The command finished with this exit code.
    Done(i32),
    /// bash itself exited, with this code (128 + signal when killed).
    Exited(i32),
    /// The deadline passed first.
    TimedOut,
    /// The cancellation token fired first.
    Cancelled,
}

/// The command the shell is running.
#[derive(Debug)]
pub(super) struct Running {
    /// A call is waiting for it. Still true at the start of a later call, it means the future of
    /// the call that waited was dropped.
    pub(super) awaited: bool,
    /// `ctrl+c` was already sent to it.
    pub(super) interrupted: bool,
}

#[derive(Debug)]
struct Stream {
    capture: StreamCapture,
    /// The marker of the running command, once seen.
    done: Option<Marker>,
    eof: bool,
}

impl Stream {
    fn new(limit: usize) -> Self {
        Self {
            capture: StreamCapture::new(limit),
            done: None,
            eof: false,
        }
    }
}

/// What the reader tasks and the waiting call share.
#[derive(Debug)]
struct Streams {
    stdout: Stream,
    stderr: Stream,
    /// The nonce of the running command, whose markers the readers look for.
    nonce: Option<String>,
    /// bash's exit code, once it has exited and been reaped.
    exit: Option<i32>,
}

#[derive(Debug)]
struct Shared {
    streams: Mutex<Streams>,
    /// Bumped after every change of `streams`; the waiting call sleeps on it.
    changed: watch::Sender<u64>,
}

impl Shared {
    fn read<T>(&self, f: impl FnOnce(&Streams) -> T) -> T {
        f(&self.streams.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn update(&self, f: impl FnOnce(&mut Streams)) {
        f(&mut self.streams.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed
            .send_modify(|version| *version = version.wrapping_add(1));
    }
}

#[derive(Debug, Clone, Copy)]
enum Which {
    Stdout,
    Stderr,
}

/// A running `bash --noprofile --norc`, leader of its own process group (supervised by
/// agent-process: registered process-wide, killed on drop).
#[derive(Debug)]
pub(super) struct Session {
    group: ProcessGroup,
    stdin: ChildStdin,
    shared: Arc<Shared>,
    changes: watch::Receiver<u64>,
    tasks: Vec<JoinHandle<()>>,
    /// The command being run, if any.
    pub(super) running: Option<Running>,
}

impl Session {
    /// Starts bash in `cwd` (or the current directory), keeping at most `limit` bytes of each
    /// stream between two takes. A non-empty `launcher` (a program and its arguments, e.g. a
    /// sandbox's `bwrap ... --`) is run instead, with `bash --noprofile --norc` appended.
    pub(super) async fn start(
        cwd: Option<&Path>,
        limit: usize,
        launcher: &[String],
    ) -> io::Result<Self> {
        let mut command = match launcher.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg("bash");
                command
            }
            None => Command::new("bash"),
        };
        command
            .args(["--noprofile", "--norc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = cwd {
            command.current_dir(dir);
        }
        let Spawned {
            group,
            stdin,
            stdout,
            stderr,
        } = ProcessGroup::spawn("bash", &mut command)?;
        let pid = group.pid();
        let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            return Err(io::Error::other("bash's pipes are missing"));
        };
        let (changed, changes) = watch::channel(0);
        let shared = Arc::new(Shared {
            streams: Mutex::new(Streams {
                stdout: Stream::new(limit),
                stderr: Stream::new(limit),
                nonce: None,
                exit: None,
            }),
            changed,
        });
        let tasks = vec![
            tokio::spawn(pump(stdout, Arc::clone(&shared), Which::Stdout)),
            tokio::spawn(pump(stderr, Arc::clone(&shared), Which::Stderr)),
            tokio::spawn(reap(group.exit_watch(), Arc::clone(&shared))),
        ];
        let mut session = Self {
            group,
            stdin,
            shared,
            changes,
            tasks,
            running: None,
        };
        // SIGINT goes to the whole group. The trap keeps bash alive while the commands it starts
        // get the default action (a trapped signal is reset to the default in children), and
        // `return` ends the sourced command as a whole, loops included, like ctrl+c in a
        // terminal. Between commands there is nothing to return from; the error is silenced.
        session
            .write(b"trap 'return 130 2>/dev/null' INT\n")
            .await?;
        debug!(pid, "bash started");
        Ok(session)
    }

    /// A handle that signals bash's process group.
    pub(super) fn signaller(&self) -> GroupSignaller {
        self.group.signaller()
    }

    /// Kills what the commands left running beside the shell (its group but bash, and its
    /// descendants that left the group); how many processes were killed.
    pub(super) fn kill_left_behind(&self) -> usize {
        let killed = super::jobs::kill_left_behind(self.group.pgid());
        if killed > 0 {
            debug!(
                killed,
                pgid = self.group.pgid(),
                "processes left by a command killed"
            );
        }
        killed
    }

    /// bash's exit code, if it has exited.
    pub(super) fn exit_code(&self) -> Option<i32> {
        self.shared.read(|s| s.exit)
    }

    /// Sends `command` to the shell, followed by the marker lines of a fresh nonce.
    ///
    /// The command is sourced from a quoted here-document
    /// (`builtin source /dev/stdin <<'DELIMITER'`, the delimiter holding the nonce), so it runs
    /// in the shell itself (`cd`, `export` and variables persist), verbatim (no quoting to get
    /// wrong), as a unit that a syntax error only fails with status 2 and that the SIGINT trap
    /// can abort as a whole (`return 130`). `source` reads the whole document before running it,
    /// so the command's standard input is empty and it cannot swallow the marker lines that
    /// follow.
    pub(super) async fn begin(&mut self, command: &str) -> io::Result<()> {
        let nonce = new_nonce();
        let delimiter = format!("OPENMANUS_RS_END_{nonce}");
        let script = format!(
            "builtin source /dev/stdin <<'{delimiter}'\n{command}\n{delimiter}\n{}",
            marker_printfs(&nonce)
        );
        self.shared.update(|s| {
            s.nonce = Some(nonce);
            s.stdout.done = None;
            s.stderr.done = None;
        });
        self.running = Some(Running {
            awaited: true,
            interrupted: false,
        });
        self.write(script.as_bytes()).await
    }

    /// Forgets the finished command.
    pub(super) fn finish(&mut self) {
        self.running = None;
        self.shared.update(|s| s.nonce = None);
    }

    /// What both streams captured since the last take.
    pub(super) fn take_output(&self) -> (Captured, Captured) {
        let mut taken = (Captured::default(), Captured::default());
        self.shared.update(|s| {
            taken = (s.stdout.capture.take(), s.stderr.capture.take());
        });
        taken
    }

    /// Sends `signal` to the whole process group.
    pub(super) fn signal(&self, signal: Signal) {
        if !self.group.signal(signal) {
            debug!(pgid = self.group.pgid(), %signal, "no process left to signal");
        }
    }

    /// Waits until the running command finishes, bash exits, `deadline` passes or `cancel`
    /// fires, whichever comes first. Woken by the readers on every change: no polling.
    pub(super) async fn wait(
        &mut self,
        deadline: Instant,
        cancel: Option<&CancellationToken>,
    ) -> Wait {
        let mut stderr_grace = None;
        let mut exit_grace = None;
        loop {
            self.changes.borrow_and_update();
            let now = Instant::now();
            let (stdout_done, stderr_done, exit, eof) = self.shared.read(|s| {
                (
                    s.stdout.done,
                    s.stderr.done.is_some(),
                    s.exit,
                    s.stdout.eof && s.stderr.eof,
                )
            });
            let mut wake = deadline;
            if let Some(marker) = stdout_done {
                let grace = *stderr_grace.get_or_insert(now + STDERR_LAG);
                if stderr_done || now >= grace {
                    return Wait::Done(marker.status.unwrap_or(-1));
                }
                wake = wake.min(grace);
            } else if let Some(code) = exit {
                let grace = *exit_grace.get_or_insert(now + EXIT_DRAIN);
                if eof || now >= grace {
                    return Wait::Exited(code);
                }
                wake = wake.min(grace);
            }
            if now >= deadline {
                return Wait::TimedOut;
            }
            tokio::select! {
                biased;
                changed = self.changes.changed() => {
                    if changed.is_err() {
                        // The sender lives as long as this session; cannot happen.
                        return Wait::Exited(-1);
                    }
                }
                () = sleep_until(wake) => {}
                () = cancelled(cancel) => return Wait::Cancelled,
            }
        }
    }

    /// Interrupts the running command: SIGINT to the group (unless `already_sent`), and once more
    /// if the command is still running after a short while; then waits as [`Session::wait`].
    pub(super) async fn interrupt(
        &mut self,
        already_sent: bool,
        deadline: Instant,
        cancel: Option<&CancellationToken>,
    ) -> Wait {
        if !already_sent {
            self.signal(Signal::SIGINT);
        }
        let resend_at = (Instant::now() + INTERRUPT_RESEND).min(deadline);
        let first = self.wait(resend_at, cancel).await;
        if first != Wait::TimedOut || Instant::now() >= deadline {
            return first;
        }
        self.signal(Signal::SIGINT);
        self.wait(deadline, cancel).await
    }

    /// Kills the whole process group (SIGTERM, a short grace, SIGKILL), waits for bash to be
    /// reaped and the pipes to drain, and returns bash's exit code if it is known. The captured
    /// output stays available to [`Session::take_output`].
    pub(super) async fn kill(&mut self) -> Option<i32> {
        self.group.shutdown(KILL_GRACE).await;
        self.wait_until(EXIT_DRAIN, |s| {
            s.exit.is_some() && s.stdout.eof && s.stderr.eof
        })
        .await;
        let code = self.exit_code();
        debug!(
            pgid = self.group.pgid(),
            ?code,
            "bash and its process group killed"
        );
        code
    }

    /// [`Session::kill`], then drops the session.
    pub(super) async fn shutdown(mut self) {
        self.kill().await;
    }

    async fn wait_until(&mut self, limit: Duration, done: impl Fn(&Streams) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            self.changes.borrow_and_update();
            if self.shared.read(&done) {
                return;
            }
            tokio::select! {
                changed = self.changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = sleep_until(deadline) => return,
            }
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stdin.write_all(bytes).await?;
        self.stdin.flush().await
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The group itself is killed by `ProcessGroup`'s drop.
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Sends SIGINT to a process group when dropped, unless disarmed: a call whose future is dropped
/// while it waits for a command interrupts that command.
#[derive(Debug)]
pub(super) struct InterruptOnDrop(Option<GroupSignaller>);

impl InterruptOnDrop {
    /// Armed for the group that `group` signals.
    pub(super) fn new(group: GroupSignaller) -> Self {
        Self(Some(group))
    }

    /// The call completed: nothing to do on drop.
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            debug!(
                pgid = group.pgid(),
                "bash call abandoned; interrupting its command"
            );
            if !group.signal(Signal::SIGINT) {
                debug!(pgid = group.pgid(), "no command left to interrupt");
            }
        }
    }
}

async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Reads one pipe until it closes, feeding the capture and waking the waiting call.
async fn pump(mut pipe: impl AsyncRead + Unpin, shared: Arc<Shared>, which: Which) {
    let mut buffer = vec![0; READ_CHUNK];
    loop {
        let read = match pipe.read(&mut buffer).await {
            Ok(n) => n,
            Err(error) => {
                warn!(?which, %error, "reading bash's output failed");
                0
            }
        };
        let data = &buffer[..read];
        shared.update(|s| {
            let Streams {
                stdout,
                stderr,
                nonce,
                ..
            } = s;
            let stream = match which {
                Which::Stdout => stdout,
                Which::Stderr => stderr,
            };
            if data.is_empty() {
                stream.eof = true;
                stream.capture.finish();
            } else if let Some(marker) = stream.capture.feed(data, nonce.as_deref()) {
                stream.done = Some(marker);
            }
        });
        if read == 0 {
            return;
        }
    }
}

/// Waits until bash exited and was reaped, and records its exit code.
async fn reap(mut exit: ExitWatch, shared: Arc<Shared>) {
    let code = exit
        .wait()
        .await
        .and_then(|status| status.code().or_else(|| status.signal().map(|s| 128 + s)))
        .unwrap_or(-1);
    debug!(code, "bash exited");
    shared.update(|s| s.exit = Some(code));
}

/// A fresh, unpredictable nonce for the marker lines of one command.
fn new_nonce() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", hasher.finish())
}
