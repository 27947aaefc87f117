//! The stop of a long-running command (`serve`, `worker`): the first Ctrl-C or SIGTERM stops it
//! gracefully, a second one kills every process at once.

use crate::output::note;

/// Completes at the first Ctrl-C or SIGTERM; a second one kills every process at once.
pub(crate) async fn stop_signal() {
    wait_for_signal().await;
    note("\nstopping: closing the sessions (press Ctrl-C again to exit at once)");
    tokio::spawn(async {
        wait_for_signal().await;
        agent_process::emergency_shutdown();
        std::process::exit(130);
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
