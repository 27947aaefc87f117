//! What the browser tests share: finding Chromium processes, and waiting for them to be gone.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

/// The prefix of the private profile every Chromium launched by agent-browser has on its
/// command line.
pub const PROFILE_MARK: &str = "openmanus-chromium-";

/// Processes whose command line mentions `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` runs (a zombie does not count).
pub fn is_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Waits up to five seconds for `pid` and every process with our profile mark to be gone.
pub async fn assert_no_chromium_left(pid: Option<i32>) {
    for _ in 0..100 {
        if !pid.is_some_and(is_running) && processes_with(PROFILE_MARK).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "Chromium processes remain: {:?}",
        processes_with(PROFILE_MARK)
    );
}
