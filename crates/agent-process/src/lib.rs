//! # agent-process — the process supervisor of openmanus-rs
//!
//! Every child process the framework starts (bash and Python sessions, sandboxes, Chromium, MCP
//! stdio servers) is spawned through [`ProcessGroup::spawn`]:
//!
//! * the child leads a process group of its own, so everything it starts is signalled with it;
//! * the group is in a process-wide registry while it may hold processes;
//! * [`ProcessGroup::shutdown`] sends SIGTERM, waits a grace period for the leader, then sends
//!   SIGKILL to the whole group; dropping a [`ProcessGroup`] sends SIGKILL at once;
//! * a task reaps the leader as soon as it exits; an empty group is then unregistered and never
//!   signalled again (its id may be reused);
//! * nothing escapes: the process becomes a child subreaper on the first spawn, so a process
//!   that leaves its group (`setsid`, `start_new_session=True`, a double fork) stays a
//!   descendant; when a group is killed for good (drop, [`ProcessGroup::kill`], the end of
//!   [`ProcessGroup::shutdown`]) the processes that left it are found (below the leader, or
//!   carrying the group's marker variable `OPENMANUS_PROCESS_GROUP` in their environment),
//!   frozen and killed with it; a reaper thread reaps the adopted ones once dead, by pid, never
//!   with `waitpid(-1)`, so no exit status tokio or the host waits for is taken. The sweep
//!   costs two walks of `/proc` per group killed (17–20 ms with ~120 processes on the loaded
//!   2-core build machine, against 6 µs without it; `cargo run --release -p openmanus-agent-process
//!   --example sweep_cost`); it runs when a tool's process ends, never on an agent's step, and
//!   a leader's exit is reported as fast as before (1.2 ms from spawn to status);
//! * nothing survives a SIGKILL of the host either: the first spawn starts a *keeper*
//!   ([`containment`]), a `/bin/sh` script in a group of its own that reads a pipe only this
//!   process holds. When the process dies, however it dies, the keeper kills what it started:
//!   where the cgroup tree is writable (cgroup v2, Linux 5.14+), the process has moved itself
//!   into a cgroup `openmanus-<pid>` of its own, which every later child inherits at fork, and
//!   the keeper writes its `cgroup.kill`; in any case it freezes and kills every process that
//!   still carries the marker variable. Without a cgroup ([`Containment::Marker`]: none
//!   writable, or [`CGROUP_SWITCH`]`=off`), a process that cleared its environment escapes.
//!   Spawns are unchanged (no `pre_exec`); the first spawn pays once for the keeper and the
//!   cgroup: 18–35 ms for the first spawn with the cgroup, 10–39 ms with the marker only
//!   (release build, three runs each on the shared 2-core machine at a load of ~17, where the
//!   noise hides the difference); later spawns of `true`: median 0.46–0.50 ms either way
//!   (`cargo run --release -p openmanus-agent-process --example keeper_cost`, with and without
//!   `OPENMANUS_PROCESS_CGROUP=off`). Why not `PR_SET_PDEATHSIG` or a PID namespace: see the keeper
//!   module's source documentation and docs/security.md.
//!
//! Secrets stay with the client: the variables given to [`withhold_env`] (the host's provider
//! keys) are removed from every child's environment, unless the spawning code sets one itself.
//!
//! [`output_within`] runs a short program (a `--version`, a capability probe) in such a group
//! and collects its output, killing the group when it does not finish within a limit;
//! [`find_on_path`] finds a program as `PATH` would.
//!
//! [`emergency_shutdown`] is the one exit path for a program that must stop at once (a second
//! Ctrl-C, where `std::process::exit` runs no destructor): it kills every registered group and
//! every descendant of this process (frozen first, so none escapes to init), then runs the hooks
//! registered with [`register_emergency_hook`] (agent-sandbox registers "remove the live Docker
//! containers").
//!
//! Hand-written on tokio and `nix` rather than on `process-wrap`: the registry, the grace
//! period and the "unregister once reaped and empty" rule are ours either way, and tokio's
//! `Command::process_group` already does the one thing `process-wrap`'s group wrapper would add.
//!
//! ```
//! use std::time::Duration;
//! use agent_process::{ProcessGroup, live_process_groups};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut command = tokio::process::Command::new("sleep");
//! command.arg("30");
//! let spawned = ProcessGroup::spawn("sleeper", &mut command).unwrap();
//! let group = spawned.group;
//! assert!(live_process_groups().contains(&group.pgid()));
//! let status = group.shutdown(Duration::from_secs(10)).await;
//! assert!(status.is_some_and(|s| !s.success()));
//! assert!(!live_process_groups().contains(&group.pgid()));
//! # });
//! ```

mod descendants;
mod emergency;
mod env;
mod escape;
mod group;
mod hooks;
mod inspect;
mod keeper;
mod marker;
mod probe;
mod reaper;
mod registry;
mod stop;

pub use emergency::{EmergencyReport, emergency_shutdown};
pub use env::{withheld_env, withhold_env};
pub use group::{ExitWatch, GroupSignaller, ProcessGroup, Spawned};
pub use hooks::{HookId, register_emergency_hook, unregister_emergency_hook};
pub use inspect::{
    command_line, descendants_of, group_members, host_pid, is_running, parent_of, processes_with,
    start_time,
};
pub use keeper::{CGROUP_SWITCH, Containment, containment};
pub use nix::sys::signal::Signal;
pub use probe::{find_on_path, output_within};
pub use registry::live_process_groups;
pub use stop::stop_requested;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
