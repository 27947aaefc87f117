//! [`ProcessGroup`]: one child process, leader of its own process group, registered process-wide,
//! reaped by a task of its own, stopped with TERM → grace → KILL, killed on drop.

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::error::Elapsed;
use tracing::{debug, warn};

use crate::registry::Entry;
use crate::{escape, marker, reaper};

/// Where the leader stands, as the reaper task publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leader {
    /// Not reaped yet.
    Running,
    /// Reaped, with this status (`None`: waiting for it failed).
    Reaped(Option<ExitStatus>),
}

/// A started child: its group and the pipes the command asked for.
#[derive(Debug)]
pub struct Spawned {
    /// The process group the child leads.
    pub group: ProcessGroup,
    /// The child's standard input, if it was piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, if it was piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, if it was piped.
    pub stderr: Option<ChildStderr>,
}

/// A child process that leads its own process group, registered in the process-wide registry
/// (so [`crate::emergency_shutdown`] can kill it).
///
/// * A task reaps the leader as soon as it exits ([`ProcessGroup::wait`] and
///   [`ProcessGroup::exit_status`] report it). If the group is then empty it is unregistered
///   and never signalled again (its id may be reused); if processes the leader started are
///   still in it, it stays registered, and is killed by [`ProcessGroup::shutdown`],
///   [`ProcessGroup::kill`] or drop.
/// * [`ProcessGroup::shutdown`]: SIGTERM to the group, up to a grace period for the leader to
///   exit, then SIGKILL to the group (stragglers included).
/// * Dropping it sends SIGKILL to the group, unless it was already killed for good.
///
/// Spawning needs a tokio runtime (the reaper is a task).
#[derive(Debug)]
pub struct ProcessGroup {
    entry: Arc<Entry>,
    pid: u32,
    leader: watch::Receiver<Leader>,
}

/// Signals a [`ProcessGroup`] without owning it (for guards such as "interrupt the command when
/// this call is dropped"). It signals only while the group is armed.
#[derive(Debug, Clone)]
pub struct GroupSignaller {
    entry: Arc<Entry>,
}

impl GroupSignaller {
    /// Sends `signal` to the whole group; true when some process received it.
    pub fn signal(&self, signal: Signal) -> bool {
        self.entry.signal(signal)
    }

    /// The process group id.
    #[must_use]
    pub fn pgid(&self) -> i32 {
        self.entry.pgid()
    }
}

/// Waits for a [`ProcessGroup`]'s leader to be reaped, without owning the group.
#[derive(Debug, Clone)]
pub struct ExitWatch {
    leader: watch::Receiver<Leader>,
}

impl ExitWatch {
    /// Waits until the leader is reaped; its status (`None`: unknown, waiting for it failed).
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        match self.leader.wait_for(|l| *l != Leader::Running).await {
            Ok(leader) => match *leader {
                Leader::Reaped(status) => status,
                Leader::Running => None,
            },
            // The reaper is gone (its runtime shut down): nothing more will be known.
            Err(_) => None,
        }
    }

    /// Whether the leader was reaped.
    #[must_use]
    pub fn has_exited(&self) -> bool {
        *self.leader.borrow() != Leader::Running
    }

    /// The leader's exit status, once it was reaped.
    #[must_use]
    pub fn exit_status(&self) -> Option<ExitStatus> {
        match *self.leader.borrow() {
            Leader::Reaped(status) => status,
            Leader::Running => None,
        }
    }
}

impl ProcessGroup {
    /// Spawns `command` as the leader of a new process group (`process_group(0)`), registers
    /// the group process-wide under `name` (for the logs), and starts the task that reaps it.
    /// The command's piped standard streams are handed back in [`Spawned`].
    ///
    /// # Errors
    ///
    /// Why the operating system could not start the program, or that no tokio runtime is
    /// running.
    pub fn spawn(name: &str, command: &mut Command) -> io::Result<Spawned> {
        // The reaper is a task: without a runtime, refuse before anything is started.
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        crate::keeper::ensure_started();
        reaper::ensure_started();
        crate::env::scrub(command);
        let id = Entry::next_id();
        command
            .process_group(0)
            .kill_on_drop(true)
            .env(marker::MARKER, marker::marker_value(id));
        reaper::leader_spawning(id);
        let spawned = command.spawn().and_then(|child| {
            let pid = child
                .id()
                .ok_or_else(|| io::Error::other(format!("{name} exited at once")))?;
            let pgid = i32::try_from(pid)
                .map_err(|_| io::Error::other(format!("{name} has an out-of-range pid {pid}")))?;
            Ok((child, pid, pgid))
        });
        let (mut child, pid, pgid) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                reaper::leader_gone(id);
                return Err(error);
            }
        };
        reaper::leader_spawned(id, pgid);
        let entry = Entry::register(id, pgid, name);
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (published, leader) = watch::channel(Leader::Running);
        runtime.spawn(reap(child, Arc::clone(&entry), published));
        debug!(pid, name, "process group started");
        Ok(Spawned {
            group: Self { entry, pid, leader },
            stdin,
            stdout,
            stderr,
        })
    }

    /// The leader's process id (also the group id).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The process group id.
    #[must_use]
    pub fn pgid(&self) -> i32 {
        self.entry.pgid()
    }

    /// Sends `signal` to the whole group (while it is armed); true when some process received
    /// it.
    pub fn signal(&self, signal: Signal) -> bool {
        self.entry.signal(signal)
    }

    /// A handle that can signal the group without owning it.
    #[must_use]
    pub fn signaller(&self) -> GroupSignaller {
        GroupSignaller {
            entry: Arc::clone(&self.entry),
        }
    }

    /// A handle that waits for the leader without owning the group.
    #[must_use]
    pub fn exit_watch(&self) -> ExitWatch {
        ExitWatch {
            leader: self.leader.clone(),
        }
    }

    /// Whether the leader was reaped.
    #[must_use]
    pub fn has_exited(&self) -> bool {
        *self.leader.borrow() != Leader::Running
    }

    /// The leader's exit status, once it was reaped.
    #[must_use]
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit_watch().exit_status()
    }

    /// Waits until the leader is reaped; its status (`None`: unknown).
    pub async fn wait(&self) -> Option<ExitStatus> {
        self.exit_watch().wait().await
    }

    /// Waits at most `limit` for the leader to be reaped; its status (`None`: unknown).
    ///
    /// # Errors
    ///
    /// [`Elapsed`] when `limit` passed first.
    pub async fn wait_timeout(&self, limit: Duration) -> Result<Option<ExitStatus>, Elapsed> {
        tokio::time::timeout(limit, self.wait()).await
    }

    /// SIGKILL to the whole group at once, and never a signal again (synchronous; the leader is
    /// still reaped by its task).
    pub fn kill(&self) {
        kill_for_good(&self.entry);
    }

    /// Stops the whole group: SIGTERM, up to `grace` for the leader to exit, then SIGKILL to
    /// the group (the leader's descendants may outlive it), and up to `grace` more for the
    /// leader to be reaped. Returns the leader's exit status when it is known.
    pub async fn shutdown(&self, grace: Duration) -> Option<ExitStatus> {
        if !self.has_exited() {
            self.signal(Signal::SIGTERM);
            if self.wait_timeout(grace).await.is_err() {
                debug!(
                    pgid = self.pgid(),
                    name = self.entry.name(),
                    "no exit after SIGTERM"
                );
            }
        }
        self.kill();
        match self.wait_timeout(grace).await {
            Ok(status) => status,
            Err(_) => {
                warn!(
                    pgid = self.pgid(),
                    name = self.entry.name(),
                    "not reaped after SIGKILL"
                );
                None
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        kill_for_good(&self.entry);
    }
}

/// SIGKILL to the group and, once, to the processes that left it (the escape sweep).
fn kill_for_good(entry: &Entry) {
    entry.kill_for_good(escape::freeze, |frozen| {
        escape::kill(frozen);
    });
}

/// Waits for the leader, publishes its status, and unregisters the group if it is empty.
async fn reap(mut child: Child, entry: Arc<Entry>, published: watch::Sender<Leader>) {
    let status = match child.wait().await {
        Ok(status) => Some(status),
        Err(error) => {
            warn!(pgid = entry.pgid(), name = entry.name(), %error, "waiting for the leader");
            None
        }
    };
    debug!(
        pgid = entry.pgid(),
        name = entry.name(),
        ?status,
        "process group leader reaped"
    );
    reaper::leader_gone(entry.id());
    // The leader's children that outlived it were re-parented to this process: the reaper
    // thread records them (SIGCHLD wakes it too; this is not left to the signal alone).
    reaper::wake_reaper();
    entry.leader_reaped();
    published.send_replace(Leader::Reaped(status));
}
