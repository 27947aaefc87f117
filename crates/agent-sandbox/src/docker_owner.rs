//! Docker sandbox containers labelled with the process that owns them, and reaped when it is
//! gone (issue 35). A process killed with SIGKILL runs no clean-up, and its container would
//! run on; the next Docker sandbox started on the engine removes it.
//!
//! The owner is named by its process id, its start time (so a reused id is not mistaken for
//! it), the machine's boot and its PID namespace: a container is reaped only by a process that
//! can tell — the same boot and namespace — and only when its owner is certainly gone.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptions};
use tracing::{info, warn};

/// The owner's process id.
pub(crate) const OWNER_PID: &str = "org.openmanus.owner.pid";
/// The owner's start time, in clock ticks since boot (`/proc/<pid>/stat`'s 22nd field).
pub(crate) const OWNER_START: &str = "org.openmanus.owner.start";
/// The machine's boot (`/proc/sys/kernel/random/boot_id`).
pub(crate) const OWNER_BOOT: &str = "org.openmanus.owner.boot";
/// The owner's PID namespace (`/proc/self/ns/pid`).
pub(crate) const OWNER_PID_NS: &str = "org.openmanus.owner.pidns";

/// The start time of process `pid` (clock ticks since boot), if it exists.
fn start_time(pid: u32) -> Option<u64> {
    agent_process::start_time(i32::try_from(pid).ok()?)
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
}

fn pid_namespace() -> Option<String> {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .map(|link| link.to_string_lossy().into_owned())
}

/// The labels naming this process as a container's owner (none of what cannot be read).
pub(crate) fn labels() -> HashMap<String, String> {
    let pid = std::process::id();
    let mut labels = HashMap::new();
    labels.insert(OWNER_PID.to_owned(), pid.to_string());
    if let Some(start) = start_time(pid) {
        labels.insert(OWNER_START.to_owned(), start.to_string());
    }
    if let Some(boot) = boot_id() {
        labels.insert(OWNER_BOOT.to_owned(), boot);
    }
    if let Some(namespace) = pid_namespace() {
        labels.insert(OWNER_PID_NS.to_owned(), namespace);
    }
    labels
}

/// Whether the owner `labels` name is certainly gone, as seen from here: the same boot and PID
/// namespace, and no process with that id and start time.
pub(crate) fn owner_gone(labels: &HashMap<String, String>) -> bool {
    let here = |key: &str, value: Option<String>| {
        value.is_some_and(|value| labels.get(key) == Some(&value))
    };
    if !here(OWNER_BOOT, boot_id()) || !here(OWNER_PID_NS, pid_namespace()) {
        return false;
    }
    let Some(pid) = labels
        .get(OWNER_PID)
        .and_then(|pid| pid.parse::<u32>().ok())
    else {
        return false;
    };
    let Some(started) = labels.get(OWNER_START).and_then(|s| s.parse::<u64>().ok()) else {
        return false;
    };
    start_time(pid) != Some(started)
}

/// Removes the containers on `docker` whose owner is gone; how many.
pub(crate) async fn reap_orphans(docker: &Docker) -> usize {
    let filters = HashMap::from([("label", vec![OWNER_PID])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = match docker.list_containers(Some(options)).await {
        Ok(containers) => containers,
        Err(error) => {
            warn!(%error, "could not list the Docker sandbox containers to reap");
            return 0;
        }
    };
    let mut reaped = 0;
    for container in containers {
        let (Some(id), Some(labels)) = (container.id, container.labels) else {
            continue;
        };
        if !owner_gone(&labels) {
            continue;
        }
        let options = RemoveContainerOptions {
            force: true,
            ..RemoveContainerOptions::default()
        };
        match docker.remove_container(&id, Some(options)).await {
            Ok(()) => {
                info!(container = %id, owner = ?labels.get(OWNER_PID), "removed a Docker sandbox container whose process is gone");
                reaped += 1;
            }
            Err(error) => {
                warn!(container = %id, %error, "could not remove an orphaned Docker sandbox container")
            }
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_owns_and_a_finished_one_is_gone() {
        let mine = labels();
        assert!(!owner_gone(&mine), "{mine:?}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let mut gone = mine.clone();
        gone.insert(OWNER_PID.to_owned(), pid.to_string());
        assert!(owner_gone(&gone));
        // Another boot, or another PID namespace, cannot be judged from here.
        let mut elsewhere = gone.clone();
        elsewhere.insert(OWNER_BOOT.to_owned(), "another-boot".to_owned());
        assert!(!owner_gone(&elsewhere));
        let mut unlabelled = gone;
        unlabelled.remove(OWNER_START);
        assert!(!owner_gone(&unlabelled));
    }
}
