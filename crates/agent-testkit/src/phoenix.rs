//! [`Phoenix`]: a real Arize Phoenix (`arize-phoenix` from PyPI, installed by `cargo xtask`
//! under `target/xtask-tools/`; `PHOENIX_BIN` names another) as an OpenTelemetry collector on
//! 127.0.0.1, for the telemetry tests: OTLP in over HTTP and gRPC, spans read back through its
//! REST API. Its database is a temporary directory; the process group is killed when the value
//! is dropped.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use serde_json::Value;
use tokio::process::Command;

/// The Phoenix release the tests run against (the xtask installs this one).
pub const PHOENIX_VERSION: &str = "20.26.1";

/// How long Phoenix may take to start (imports and database migrations; a loaded 2-core
/// machine).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// A `phoenix serve` child process on two free loopback ports.
#[derive(Debug)]
pub struct Phoenix {
    group: Option<ProcessGroup>,
    http_port: u16,
    grpc_port: u16,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

/// Two different free loopback ports (both held while they are chosen, then released for the
/// child to take).
fn free_ports() -> io::Result<(u16, u16)> {
    let first = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let second = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok((first.local_addr()?.port(), second.local_addr()?.port()))
}

/// The `phoenix` executable: `$PHOENIX_BIN`, else the xtask's virtualenv.
fn program() -> io::Result<PathBuf> {
    if let Some(path) = std::env::var_os("PHOENIX_BIN") {
        return Ok(PathBuf::from(path));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../target/xtask-tools/phoenix-{PHOENIX_VERSION}/bin/phoenix"
    ));
    if path.exists() {
        Ok(path)
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "Arize Phoenix (the telemetry tests' collector) is missing: run `cargo xtask \
             integration` (it installs arize-phoenix from PyPI into target/xtask-tools) or set \
             PHOENIX_BIN",
        ))
    }
}

impl Phoenix {
    /// Starts Phoenix (no telemetry of its own, nothing fetched from the internet) and waits
    /// until it answers `/healthz`.
    ///
    /// # Errors
    ///
    /// The program is missing, or it did not become ready.
    pub async fn start() -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("phoenix-").tempdir()?;
        agent_llm::http::install_crypto_provider();
        let client = agent_llm::http::client_builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(io::Error::other)?;
        let (http_port, grpc_port) = free_ports()?;
        let mut phoenix = Self {
            group: None,
            http_port,
            grpc_port,
            dir,
            client,
        };
        phoenix.spawn().await?;
        Ok(phoenix)
    }

    async fn spawn(&mut self) -> io::Result<()> {
        let program = program()?;
        let mut command = Command::new(&program);
        command
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", self.http_port.to_string())
            .env("PHOENIX_GRPC_PORT", self.grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", self.dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_ENABLE_MCP_SERVER", "false")
            .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
            .env("PHOENIX_ALLOWED_SANDBOX_PROVIDERS", "NONE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.path().join("phoenix.log"))?);
        // Our own export settings are not Phoenix's.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
        let Spawned { group, .. } = ProcessGroup::spawn("phoenix", &mut command)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let health = format!("{}/healthz", self.http_endpoint());
        loop {
            if group.has_exited() {
                return Err(io::Error::other(format!(
                    "phoenix exited before it was ready: {}",
                    self.log()
                )));
            }
            let ready = self
                .client
                .get(&health)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                group.kill();
                return Err(io::Error::other(format!(
                    "phoenix did not become ready in {READY_TIMEOUT:?}: {}",
                    self.log()
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        self.group = Some(group);
        Ok(())
    }

    /// What Phoenix wrote to its standard error (for failure messages).
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("phoenix.log")).unwrap_or_default()
    }

    /// Its HTTP base URL (UI, REST API, OTLP/HTTP at `/v1/traces`).
    #[must_use]
    pub fn http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Its OTLP/gRPC endpoint.
    #[must_use]
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// The environment that sends a program's spans here, into `project` (a project of its
    /// own per test): OTLP over `http/protobuf`, or `grpc` when `grpc`.
    #[must_use]
    pub fn otel_env(&self, project: &str, grpc: bool) -> Vec<(String, String)> {
        let (endpoint, protocol) = if grpc {
            (self.grpc_endpoint(), "grpc")
        } else {
            (self.http_endpoint(), "http/protobuf")
        };
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), endpoint),
            (
                "OTEL_EXPORTER_OTLP_PROTOCOL".to_owned(),
                protocol.to_owned(),
            ),
            (
                "OTEL_RESOURCE_ATTRIBUTES".to_owned(),
                format!("openinference.project.name={project}"),
            ),
        ]
    }

    /// Every span of `project` so far (empty while the project does not exist yet).
    ///
    /// # Errors
    ///
    /// Phoenix did not answer, or answered something other than its span list.
    pub async fn spans(&self, project: &str) -> io::Result<Vec<Value>> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/v1/projects/{project}/spans?limit=1000",
                self.http_endpoint()
            );
            if let Some(cursor) = &cursor {
                url.push_str(&format!("&cursor={cursor}"));
            }
            let response = self
                .client
                .get(&url)
                .send()
                .await
                .map_err(io::Error::other)?;
            if response.status() == reqwest::StatusCode::NOT_FOUND {
                return Ok(spans);
            }
            let body: Value = response
                .error_for_status()
                .map_err(io::Error::other)?
                .json()
                .await
                .map_err(io::Error::other)?;
            let page = body["data"]
                .as_array()
                .ok_or_else(|| io::Error::other(format!("not a span list: {body}")))?;
            spans.extend(page.iter().cloned());
            match body["next_cursor"].as_str() {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => return Ok(spans),
            }
        }
    }

    /// The spans of `project` once `done` says they are all there (Phoenix ingests in the
    /// background), or an error with what there was after `patience`.
    ///
    /// # Errors
    ///
    /// As [`Phoenix::spans`]; `done` never held.
    pub async fn wait_for_spans(
        &self,
        project: &str,
        patience: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) -> io::Result<Vec<Value>> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let spans = self.spans(project).await?;
            if done(&spans) {
                return Ok(spans);
            }
            if tokio::time::Instant::now() >= deadline {
                let names: Vec<&str> = spans.iter().filter_map(|s| s["name"].as_str()).collect();
                return Err(io::Error::other(format!(
                    "the spans of {project} were not all there after {patience:?}: {names:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Stops Phoenix (the collector goes away; its database stays for [`Phoenix::restart`]).
    pub async fn stop(&mut self) {
        if let Some(group) = self.group.take() {
            group.shutdown(Duration::from_secs(5)).await;
        }
    }

    /// Starts it again on the same ports with the same database.
    ///
    /// # Errors
    ///
    /// As [`Phoenix::start`].
    pub async fn restart(&mut self) -> io::Result<()> {
        self.stop().await;
        self.spawn().await
    }
}
