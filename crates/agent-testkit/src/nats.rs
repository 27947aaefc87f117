//! [`NatsServer`]: a real `nats-server` with JetStream as a child process on 127.0.0.1, for the
//! tests of the workers (Debian's `nats-server` package). Its store is a temporary directory;
//! the process is killed when the value is dropped, and can be restarted on the same port and
//! store to test reconnection.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a server may take to say it is ready (a loaded 2-core machine).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A `nats-server -js` child process on 127.0.0.1 with a store of its own.
#[derive(Debug)]
pub struct NatsServer {
    port: u16,
    store: tempfile::TempDir,
    child: Option<Child>,
}

impl NatsServer {
    /// Starts `nats-server` (from `PATH`, or the `NATS_SERVER` variable) with JetStream on a
    /// free loopback port and waits until it reports that it is ready.
    ///
    /// # Errors
    ///
    /// The program is missing, or it did not become ready.
    pub fn start() -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let store = tempfile::Builder::new().prefix("nats-js-").tempdir()?;
        let mut server = Self {
            port,
            store,
            child: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// The client URL, `nats://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The JetStream store directory.
    #[must_use]
    pub fn store_dir(&self) -> &Path {
        self.store.path()
    }

    /// The server's process id (`None` while stopped).
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server (SIGKILL) and waits for it. Its store stays.
    ///
    /// # Errors
    ///
    /// The process could not be killed.
    pub fn stop(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts the server again on the same port with the same store (after [`NatsServer::stop`]).
    ///
    /// # Errors
    ///
    /// As [`NatsServer::start`].
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop()?;
        self.spawn()
    }

    fn spawn(&mut self) -> io::Result<()> {
        let program: PathBuf = std::env::var_os("NATS_SERVER")
            .map_or_else(|| PathBuf::from("nats-server"), PathBuf::from);
        let child = Command::new(&program)
            .arg("-js")
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .arg("-sd")
            .arg(self.store.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("{} could not start: {error}", program.display()),
                )
            })?;
        let child = crate::ready::ready_on_stderr(
            child,
            "Server is ready",
            READY_TIMEOUT,
            &format!("nats-server on port {}", self.port),
        )?;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
