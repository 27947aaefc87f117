//! The keeper: what stops this process's tools when it is killed with SIGKILL.
//!
//! Every normal exit path kills the groups (drop, shutdown, [`crate::emergency_shutdown`]), but
//! a process killed with SIGKILL runs none of them: its tools (and what they started, `setsid`
//! ones included) would be re-parented and live on. So on the first spawn, this process starts
//! a *keeper*: a small `/bin/sh` script, in a process group of its own, outside everything it
//! guards, whose standard input is a pipe only this process holds (close-on-exec, so no tool
//! inherits it). When this process ends, however it ends, the kernel closes the pipe; the
//! keeper reads end-of-file and kills what is left:
//!
//! 1. **A cgroup v2** (when the cgroup tree is writable): before the keeper starts, a cgroup
//!    `openmanus-<pid>` is made under this process's own cgroup, and once the keeper runs, this
//!    process moves itself into it. Every process it starts from then on is created in it, and
//!    stays in it whatever it does (`setsid`, double fork, a cleared environment); the keeper
//!    writes `1` to its `cgroup.kill`, which kills them all at once, nested cgroups included
//!    (an `openmanus` run inside a tool makes its own under it), then removes the cgroup once
//!    empty. Children inherit the cgroup at fork: nothing is done per spawn, the spawn path is
//!    unchanged (no `pre_exec`, so the standard library keeps its `posix_spawn` fast path).
//! 2. **The group marker**, always, and the only guard where no cgroup can be made (no cgroup
//!    v2 mounted, a read-only tree, an unprivileged user outside a delegated subtree, or
//!    `OPENMANUS_PROCESS_CGROUP=off`): every process whose environment carries this process's
//!    marker (`OPENMANUS_PROCESS_GROUP=<pid>:…`, given to every group leader and inherited by
//!    its descendants, see [`crate::reaper`]) is frozen (SIGSTOP, the scan repeated until no
//!    new one appears), then killed. A process that cleared its environment escapes this one.
//!
//! Not used, and why: `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends
//! (tokio's blocking threads retire after ten idle seconds, which would kill a live tool),
//! reaches only the direct child, and needs a `pre_exec` hook on every spawn; a PID namespace
//! for the tools would make their pids disagree with `/proc` (`pkill`, `kill $(pgrep …)` would
//! miss) unless a mount namespace with its own `/proc` came with it, and a multithreaded
//! process cannot enter a user namespace, so an unprivileged host could not have one anyway.
//!
//! The keeper is a child of this process: the reaper never takes its status (it carries no
//! marker), and [`crate::emergency_shutdown`] leaves it alone (it must outlive this process).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use tracing::{debug, warn};

use crate::descendants::me;
use crate::marker::MARKER;

/// Set to `off` to keep this process out of a cgroup of its own (the keeper then guards with
/// the group marker only).
pub const CGROUP_SWITCH: &str = "OPENMANUS_PROCESS_CGROUP";

/// How the keeper stops this process's tools if it is killed without running its clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Everything this process started since its first spawn is in this cgroup (v2), killed as
    /// a whole through `cgroup.kill`; the processes carrying its marker are killed too.
    Cgroup(PathBuf),
    /// No cgroup could be made: the processes carrying this process's group marker in their
    /// environment are killed (one that cleared its environment survives).
    Marker,
    /// The keeper could not start: nothing stops the tools if this process is SIGKILLed.
    Unguarded,
}

/// The keeper, once started.
struct Keeper {
    /// Held for the life of the process (with the pipe's write end): dropping it would close
    /// the pipe and fire the keeper.
    _child: Child,
    pid: i32,
}

static KEEPER: OnceLock<Option<Keeper>> = OnceLock::new();
static CONTAINMENT: OnceLock<Containment> = OnceLock::new();

/// The keeper's script (`$0` names it in `ps`). `$1`: the host's pid; `$2`: the cgroup
/// directory, or empty.
const SCRIPT: &str = r#"
trap '' HUP INT TERM QUIT PIPE
host=$1 cgroup=$2
# Until the host ends: only it holds the other end of standard input.
while read -r _; do :; done
if [ -n "$cgroup" ]; then echo 1 > "$cgroup/cgroup.kill"; fi 2>/dev/null
# The processes carrying the host's marker: frozen until no new one appears, then killed.
marked() {
  grep -lsaz "^MARKER=$host:" /proc/[0-9]*/environ 2>/dev/null |
    sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p'
}
stopped=" " round=0
while [ "$round" -lt 16 ]; do
  fresh=""
  for pid in $(marked); do
    case "$stopped" in *" $pid "*) ;; *) fresh="$fresh $pid" ;; esac
  done
  [ -z "$fresh" ] && break
  kill -STOP $fresh 2>/dev/null
  stopped="$stopped${fresh# } " round=$((round + 1))
done
[ "$stopped" != " " ] && kill -KILL $stopped 2>/dev/null
# The cgroup, children first, once its processes are gone.
sweep() {
  for d in "$1"/*/; do [ -d "$d" ] && sweep "${d%/}"; done
  rmdir "$1" 2>/dev/null
}
if [ -n "$cgroup" ]; then
  tries=0
  while [ -d "$cgroup" ] && [ "$tries" -lt 600 ]; do
    sweep "$cgroup" || sleep 0.1
    tries=$((tries + 1))
  done
fi
"#;

/// Starts the keeper (and moves this process into its cgroup), once; returns how it guards.
pub(crate) fn ensure_started() -> &'static Containment {
    CONTAINMENT.get_or_init(|| {
        let cgroup = make_cgroup();
        let Some(keeper) = start(cgroup.as_deref()) else {
            if let Some(dir) = &cgroup {
                let _ = std::fs::remove_dir(dir);
            }
            let _ = KEEPER.set(None);
            return Containment::Unguarded;
        };
        let _ = KEEPER.set(Some(keeper));
        match cgroup {
            Some(dir) => match enter(&dir) {
                Ok(()) => {
                    debug!(cgroup = %dir.display(), "tools contained in a cgroup");
                    Containment::Cgroup(dir)
                }
                Err(error) => {
                    debug!(cgroup = %dir.display(), %error, "cannot enter the cgroup: the keeper guards with the group marker only");
                    let _ = std::fs::remove_dir(&dir);
                    Containment::Marker
                }
            },
            None => Containment::Marker,
        }
    })
}

/// How this process's tools are stopped if it is killed with SIGKILL; `None` before the first
/// [`crate::ProcessGroup::spawn`] (the keeper starts with it).
#[must_use]
pub fn containment() -> Option<Containment> {
    CONTAINMENT.get().cloned()
}

/// The keeper's pid, once it runs.
pub(crate) fn keeper_pid() -> Option<i32> {
    KEEPER.get().and_then(Option::as_ref).map(|k| k.pid)
}

/// Makes `openmanus-<pid>` under this process's cgroup (v2); `None` when there is no writable
/// one, or the switch is off.
fn make_cgroup() -> Option<PathBuf> {
    if std::env::var(CGROUP_SWITCH).is_ok_and(|v| v.eq_ignore_ascii_case("off")) {
        debug!("{CGROUP_SWITCH}=off: no cgroup");
        return None;
    }
    let own = own_cgroup()?;
    let pid = me();
    for attempt in 0..8 {
        let name = if attempt == 0 {
            format!("openmanus-{pid}")
        } else {
            format!("openmanus-{pid}-{attempt}")
        };
        let dir = own.join(name);
        match std::fs::create_dir(&dir) {
            // The root cgroup has no `cgroup.kill`; a child has one from Linux 5.14 on.
            Ok(()) if dir.join("cgroup.kill").exists() => return Some(dir),
            Ok(()) => {
                debug!(cgroup = %dir.display(), "no cgroup.kill (Linux before 5.14): no cgroup");
                let _ = std::fs::remove_dir(&dir);
                return None;
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                debug!(cgroup = %own.display(), %error, "cannot make a cgroup");
                return None;
            }
        }
    }
    None
}

/// This process's cgroup v2 directory: its path in `/proc/self/cgroup` (the `0::` line) under
/// the cgroup2 mount of `/proc/self/mountinfo`.
fn own_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    cgroup_dir(path, &mounts)
}

/// Where the cgroup `path` (as `/proc/self/cgroup` names it) is, given the mount table.
fn cgroup_dir(path: &str, mountinfo: &str) -> Option<PathBuf> {
    if path.ends_with(" (deleted)") {
        return None;
    }
    mountinfo.lines().find_map(|line| {
        // id parent major:minor root mountpoint options [optional...] - fstype source super
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = mount.split_whitespace().collect();
        let (root, point) = (fields.get(3)?, fields.get(4)?);
        let rest = if *root == "/" {
            path
        } else {
            path.strip_prefix(root)
                .filter(|rest| rest.is_empty() || rest.starts_with('/'))?
        };
        let rest = rest.trim_start_matches('/');
        let dir = Path::new(point);
        Some(if rest.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(rest)
        })
    })
}

/// Starts the keeper for `cgroup` (and the marker); `None` when it cannot start.
fn start(cgroup: Option<&Path>) -> Option<Keeper> {
    let script = SCRIPT.replace("MARKER", MARKER);
    let cgroup = cgroup.map(|d| d.as_os_str().to_owned()).unwrap_or_default();
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .arg("openmanus-keeper")
        .arg(me().to_string())
        .arg(cgroup)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .current_dir("/")
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(child) => {
            let pid = i32::try_from(child.id()).ok()?;
            debug!(pid, "keeper started");
            Some(Keeper { _child: child, pid })
        }
        Err(error) => {
            warn!(%error, "cannot start the keeper: tools may outlive this process if it is killed with SIGKILL");
            None
        }
    }
}

/// Moves this process into `dir`.
fn enter(dir: &Path) -> std::io::Result<()> {
    let mut procs = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))?;
    procs.write_all(me().to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::cgroup_dir;
    use std::path::PathBuf;

    const HYBRID: &str = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                          35 31 0:31 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
    const BIND: &str =
        "29 23 0:26 /system.slice/app.service /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n";

    #[test]
    fn the_cgroup_is_found_under_the_cgroup2_mount() {
        assert_eq!(
            cgroup_dir("/", HYBRID),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup_dir("/a/b", HYBRID),
            Some(PathBuf::from("/sys/fs/cgroup/unified/a/b"))
        );
        assert_eq!(
            cgroup_dir("/system.slice/app.service/x", BIND),
            Some(PathBuf::from("/sys/fs/cgroup/x"))
        );
        assert_eq!(cgroup_dir("/elsewhere", BIND), None);
        assert_eq!(cgroup_dir("/a (deleted)", HYBRID), None);
        assert_eq!(
            cgroup_dir("/", "35 31 0:31 / /x rw - cgroup cgroup rw\n"),
            None
        );
    }
}
