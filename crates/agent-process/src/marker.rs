//! The group marker: the variable every group leader gets in its environment (inherited by all
//! it starts), read back from `/proc/<pid>/environ` to tell a group's processes after they left
//! the group (the escape sweep, the reaper, the keeper's script).

use crate::descendants::me;

/// The environment variable every group leader gets: `<host pid>:<group number>`.
pub(crate) const MARKER: &str = "OPENMANUS_PROCESS_GROUP";

/// The marker value of group `id` of this process.
pub(crate) fn marker_value(id: u64) -> String {
    format!("{}:{id}", me())
}

/// A marker found in a process's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    /// The pid of the process that spawned the group.
    pub host: i32,
    /// The group's number in that process.
    pub id: u64,
}

/// What the environment of a process says of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Environ {
    /// It carries this marker.
    Marked(Marker),
    /// It carries none.
    Unmarked,
    /// It cannot be read now (gone, not ours, or empty: in the middle of an `execve`).
    Unknown,
}

/// The group marker in `pid`'s environment.
pub(crate) fn environ_of(pid: i32) -> Environ {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Environ::Unknown;
    };
    if environ.is_empty() {
        return Environ::Unknown;
    }
    let prefix = format!("{MARKER}=");
    let marker = environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .and_then(|value| {
            let (host, id) = std::str::from_utf8(value).ok()?.split_once(':')?;
            Some(Marker {
                host: host.parse().ok()?,
                id: id.parse().ok()?,
            })
        });
    marker.map_or(Environ::Unmarked, Environ::Marked)
}

/// The group marker in `pid`'s environment, if it has one (and may be read).
pub(crate) fn marker_of(pid: i32) -> Option<Marker> {
    match environ_of(pid) {
        Environ::Marked(marker) => Some(marker),
        Environ::Unmarked | Environ::Unknown => None,
    }
}
