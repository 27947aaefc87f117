//! What the test kit's HTTP servers share: a shutdown signal their handlers can wait on, and a
//! server task on 127.0.0.1 that stops with graceful shutdown when asked or dropped.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A shutdown flag shared by a server and its handlers; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown(Arc<watch::Sender<bool>>);

impl Default for Shutdown {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }
}

impl Shutdown {
    /// Asks the server (and every waiting handler) to stop.
    pub(crate) fn trigger(&self) {
        self.0.send_replace(true);
    }

    /// Resolves when the server is shutting down.
    pub(crate) async fn stopping(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so this only ends on shutdown.
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

/// A server task on 127.0.0.1; triggers its shutdown when dropped.
#[derive(Debug)]
pub(crate) struct LocalServer {
    addr: SocketAddr,
    shutdown: Shutdown,
    task: Option<JoinHandle<()>>,
}

impl LocalServer {
    /// Binds 127.0.0.1:`port` (0: a free port).
    ///
    /// # Errors
    ///
    /// The socket could not be bound.
    pub(crate) async fn bind(port: u16) -> io::Result<TcpListener> {
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await
    }

    /// Serves `app` on `listener` until `shutdown` triggers.
    /// `nodelay` sets TCP_NODELAY on every connection (streamed replies are many small writes:
    /// without it, Nagle's algorithm and the client's delayed ACK stall each by ~40 ms).
    pub(crate) fn start(
        listener: TcpListener,
        app: Router,
        shutdown: Shutdown,
        nodelay: bool,
        name: &'static str,
    ) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            let listener = listener.tap_io(move |tcp| {
                if nodelay && let Err(error) = tcp.set_nodelay(true) {
                    tracing::warn!(%error, "could not set TCP_NODELAY");
                }
            });
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.stopping().await })
                .await;
            if let Err(error) = served {
                tracing::error!(%error, server = name, "test server stopped");
            }
        });
        tracing::debug!(%addr, server = name, "test server listening");
        Ok(Self {
            addr,
            shutdown,
            task: Some(task),
        })
    }

    /// The socket address served.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and waits until it has stopped.
    pub(crate) async fn shutdown(mut self) {
        self.shutdown.trigger();
        if let Some(task) = self.task.take() {
            // A panic inside the server task is not ours to re-raise here.
            let _ = task.await;
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}
