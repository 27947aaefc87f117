//! The stop of a long-running command (`serve`, `worker`): the first Ctrl-C or SIGTERM stops it
//! gracefully, a second one kills every process at once.

use crate::output::note;

/// Completes at the first Ctrl-C or SIGTERM; a second one kills every process at once.
pub(crate) async fn stop_signal() {
    agent_process::stop_requested().await;
    note("\nstopping: closing the sessions (press Ctrl-C again to exit at once)");
    tokio::spawn(async {
        agent_process::stop_requested().await;
        agent_process::emergency_shutdown();
        std::process::exit(130);
    });
}
