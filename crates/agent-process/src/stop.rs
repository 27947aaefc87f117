//! The stop request of a long-running program (a server, a worker): Ctrl-C or SIGTERM, the
//! signal a terminal and a process manager (systemd, Docker, Kubernetes) send.

/// Completes at the first SIGINT (Ctrl-C) or SIGTERM. Where SIGTERM cannot be listened to,
/// at the first Ctrl-C only.
pub async fn stop_requested() {
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
