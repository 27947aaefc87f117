//! What the browser tests share: finding Chromium processes, and waiting for them to be gone.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

/// The prefix of the private profile every Chromium launched by agent-browser has on its
/// command line.
pub const PROFILE_MARK: &str = "openmanus-chromium-";

pub use agent_process::{is_running, processes_with};

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
