//! A server on 127.0.0.1 over a real SQLite store, agents talking to the strict mock model,
//! and a small SSE client.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_config::Config;
use agent_core::ToolCall;
use agent_llm::LlmSettings;
use agent_server::{Hub, Server, ServerOptions};
use agent_store::Store;
use agent_testkit::MockOpenAi;
use agents::AgentFactory;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A generous bound for anything a test waits on (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(120);

pub fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

pub struct TestServer {
    pub url: String,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub mock: MockOpenAi,
    pub http: reqwest::Client,
    pub hub: Arc<Hub>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

pub fn factory(mock: &MockOpenAi, root: &Path) -> AgentFactory {
    factory_with(mock, root, |_| {})
}

pub fn factory_with(
    mock: &MockOpenAi,
    root: &Path,
    change: impl FnOnce(&mut Config),
) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", mock.base_url()).with_api_key("sk-server");
    llm.max_attempts = 1;
    let mut config = Config::new(llm);
    change(&mut config);
    AgentFactory::new(config).with_workspace(root)
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(change: impl FnOnce(&mut ServerOptions)) -> Self {
        Self::start_full(change, |_| {}, |hub| hub).await
    }

    /// As [`TestServer::start_with`], the hub changed by `hub` before the server starts.
    pub async fn start_with_hub(
        change: impl FnOnce(&mut ServerOptions),
        hub: impl FnOnce(Hub) -> Hub,
    ) -> Self {
        Self::start_full(change, |_| {}, hub).await
    }

    /// As [`TestServer::start_with`], the config changed by `configure`.
    pub async fn start_configured(
        change: impl FnOnce(&mut ServerOptions),
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        Self::start_full(change, configure, |hub| hub).await
    }

    pub async fn start_full(
        change: impl FnOnce(&mut ServerOptions),
        configure: impl FnOnce(&mut Config),
        hub: impl FnOnce(Hub) -> Hub,
    ) -> Self {
        let change_hub = hub;
        let mock = MockOpenAi::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
        let mut options = ServerOptions::new(dir.path().join("sessions"));
        options.bind = "127.0.0.1:0".parse().unwrap();
        change(&mut options);
        let hub = Arc::new(change_hub(Hub::new(
            store,
            factory_with(&mock, &dir.path().join("default"), configure),
            &options.sessions_root,
            options.max_concurrent_runs,
        )));
        Self::launch(dir, mock, &options, hub).await
    }

    /// Serves `hub` with `options`; `dir` and `mock` are kept for the test.
    async fn launch(
        dir: tempfile::TempDir,
        mock: MockOpenAi,
        options: &ServerOptions,
        hub: Arc<Hub>,
    ) -> Self {
        let server = Server::bind(options, Arc::clone(&hub)).await.unwrap();
        let addr = server.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server
                .serve(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        let url = format!("http://127.0.0.1:{}", addr.port());
        Self {
            url,
            addr,
            dir,
            mock,
            http: agent_llm::http::shared_client().unwrap(),
            hub,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server as a shutdown does, then starts another on the same store and
    /// sessions, with the default options (on another port).
    #[allow(dead_code)] // not every test binary restarts
    pub async fn restart(mut self) -> Self {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        self.hub.store().close().await;
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let mock = std::mem::replace(&mut self.mock, MockOpenAi::start().await.unwrap());
        let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
        let mut options = ServerOptions::new(dir.path().join("sessions"));
        options.bind = "127.0.0.1:0".parse().unwrap();
        let hub = Arc::new(Hub::new(
            store,
            factory(&mock, &dir.path().join("default")),
            &options.sessions_root,
            options.max_concurrent_runs,
        ));
        Self::launch(dir, mock, &options, hub).await
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// Creates a session of `agent` and returns its id.
    pub async fn create(&self, agent: &str) -> String {
        let (status, body) = self.post("/api/sessions", json!({ "agent": agent })).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    pub async fn events(&self, id: &str, last_event_id: Option<i64>) -> SseClient {
        SseClient::connect(
            &self.http,
            &format!("{}/api/sessions/{id}/events", self.url),
            last_event_id,
        )
        .await
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.dir.path().join("sessions")
    }
}

/// The test kit's SSE client, its errors made test failures.
pub struct SseClient(agent_testkit::SseClient);

pub use agent_testkit::SseEvent;

impl SseClient {
    pub async fn connect(http: &reqwest::Client, url: &str, last_event_id: Option<i64>) -> Self {
        Self(
            agent_testkit::SseClient::connect(http, url, last_event_id)
                .await
                .unwrap(),
        )
    }

    /// The next message (comments and keep-alives skipped).
    pub async fn next(&mut self) -> SseEvent {
        self.0.next().await.unwrap()
    }

    /// Messages until one matches `stop` (included).
    pub async fn until(&mut self, stop: impl Fn(&SseEvent) -> bool) -> Vec<SseEvent> {
        self.0.until(stop).await.unwrap()
    }
}

/// A TCP service on 127.0.0.1 that keeps what its first client sends: what a tool needing the
/// network would reach.
pub struct LocalService {
    pub port: u16,
    heard: oneshot::Receiver<String>,
}

impl LocalService {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (said, heard) = oneshot::channel();
        std::thread::spawn(move || {
            use std::io::Read;
            let (mut stream, _) = listener.accept().unwrap();
            let mut text = String::new();
            stream.read_to_string(&mut text).unwrap();
            let _ = said.send(text);
        });
        Self { port, heard }
    }

    /// Python code that connects to the service, sends `text` and prints `sent`.
    pub fn python_client(&self, text: &str) -> String {
        format!(
            "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=30)\n\
             s.sendall(b'{text}')\ns.close()\nprint('sent')\n",
            port = self.port
        )
    }

    /// What the first client sent; fails the test when nobody came in time.
    pub async fn heard(self) -> String {
        tokio::time::timeout(PATIENCE, self.heard)
            .await
            .expect("a client reaches the local service in time")
            .expect("the service thread ended without a client")
    }
}
