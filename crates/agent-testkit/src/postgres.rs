//! [`PgCluster`]: a real PostgreSQL server as a child process on 127.0.0.1, for the tests of
//! the session store on PostgreSQL (Debian's `postgresql` package: `initdb` and `postgres`
//! from `/usr/lib/postgresql/<version>/bin`). Its cluster is a new directory under `/tmp`,
//! initialised for the test (trust authentication on loopback, user `openmanus`), removed when
//! the value is dropped; each test makes a database of its own ([`PgCluster::create_database`]).
//!
//! `initdb` and `postgres` refuse to run as root: as root they run as the `postgres` user
//! (`setpriv`, which execs, so the child *is* the server), and the cluster's directory is
//! given to that user.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// How long a server may take to say it is ready (a loaded 2-core machine).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The role the tests connect as.
pub const PG_USER: &str = "openmanus";

/// A `postgres` child process on 127.0.0.1 with a cluster of its own.
#[derive(Debug)]
pub struct PgCluster {
    port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl PgCluster {
    /// Initialises a cluster in a new directory and starts its server on a free loopback port,
    /// waiting until it accepts connections. The programs come from `$OPENMANUS_PG_BIN`, else
    /// the newest `/usr/lib/postgresql/*/bin`.
    ///
    /// # Errors
    ///
    /// PostgreSQL is not installed, `initdb` failed, or the server did not become ready.
    pub fn start() -> io::Result<Self> {
        let bin = bin_dir()?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        // Directly under /tmp: a test's own temporary directory is not open to `postgres`.
        let dir = tempfile::Builder::new()
            .prefix("openmanus-pg-")
            .tempdir_in("/tmp")?;
        let owner = server_user()?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        let data = dir.path().join("data");
        let init = as_server_user(owner.is_some(), &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", PG_USER, "-E", "UTF8", "--no-sync"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|error| missing(&bin.join("initdb"), &error))?;
        if !init.status.success() {
            return Err(failed("initdb", &init));
        }
        let mut cluster = Self {
            port,
            bin,
            dir,
            child: None,
        };
        cluster.spawn(owner.is_some())?;
        Ok(cluster)
    }

    /// The URL of the database `postgres` (every cluster has it).
    #[must_use]
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// The URL of the database `name` on this cluster.
    #[must_use]
    pub fn database_url(&self, name: &str) -> String {
        format!("postgres://{PG_USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates the database `name` (letters, digits and `_`) and returns its URL.
    ///
    /// # Errors
    ///
    /// A name with other characters, or `psql` failed (the database exists, the server is
    /// gone).
    pub fn create_database(&self, name: &str) -> io::Result<String> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a plain database name: {name:?}"),
            ));
        }
        self.psql(&format!("CREATE DATABASE {name}"))?;
        Ok(self.database_url(name))
    }

    /// Runs one SQL command with `psql` on the database `postgres`; returns what it printed
    /// (unaligned, tuples only).
    ///
    /// # Errors
    ///
    /// `psql` is missing or the command failed.
    pub fn psql(&self, sql: &str) -> io::Result<String> {
        let psql = self.bin.join("psql");
        let output = Command::new(&psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                PG_USER,
            ])
            .args([
                "-d",
                "postgres",
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|error| missing(&psql, &error))?;
        if !output.status.success() {
            return Err(failed("psql", &output));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// The server's process id (`None` once stopped).
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server (a fast shutdown: SIGINT, then waits). Its cluster stays until drop.
    ///
    /// # Errors
    ///
    /// The process could not be signalled or waited for.
    pub fn stop(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            // SIGINT: sessions are ended and the shared memory released (a SIGKILL would
            // leave it behind).
            let pid = i32::try_from(child.id()).map_err(io::Error::other)?;
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            )
            .map_err(io::Error::other)?;
            child.wait()?;
        }
        Ok(())
    }

    fn spawn(&mut self, as_postgres: bool) -> io::Result<()> {
        let postgres = self.bin.join("postgres");
        let child = as_server_user(as_postgres, &postgres)
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args([
                "-p",
                &self.port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
            ])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.dir.path().display()
            ))
            // A test cluster: nothing needs to survive a crash of the machine.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off"])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| missing(&postgres, &error))?;
        let child = crate::ready::ready_on_stderr(
            child,
            "database system is ready to accept connections",
            READY_TIMEOUT,
            &format!("postgres on port {}", self.port),
        )?;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `$OPENMANUS_PG_BIN`, else the newest `/usr/lib/postgresql/<version>/bin` with `initdb`.
fn bin_dir() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("OPENMANUS_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "PostgreSQL is not installed (/usr/lib/postgresql: {error}); `cargo xtask \
                     setup` installs it, or set OPENMANUS_PG_BIN"
                ),
            )
        })?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no /usr/lib/postgresql/<version>/bin/initdb; `cargo xtask setup` installs \
             PostgreSQL, or set OPENMANUS_PG_BIN",
        )
    })
}

/// The `postgres` user's ids when this process is root (the server refuses root), else `None`.
fn server_user() -> io::Result<Option<(u32, u32)>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let id = |flag: &str| -> io::Result<u32> {
        let output = Command::new("id").args([flag, "postgres"]).output()?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .map_err(|_| io::Error::other("running as root, and there is no user `postgres`"))
    };
    Ok(Some((id("-u")?, id("-g")?)))
}

/// `program`, run as the `postgres` user when `as_postgres` (through `setpriv`, which execs).
fn as_server_user(as_postgres: bool, program: &Path) -> Command {
    if as_postgres {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--",
            ])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn missing(program: &Path, error: &io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("{} could not start: {error}", program.display()),
    )
}

fn failed(what: &str, output: &Output) -> io::Error {
    io::Error::other(format!(
        "{what} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    ))
}
