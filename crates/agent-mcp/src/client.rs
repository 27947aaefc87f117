//! The MCP client: connections to MCP servers by id, and their tools as agent [`Tool`]s.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientJsonRpcMessage, Implementation,
    ServerJsonRpcMessage, Tool as McpToolDefinition,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::content::to_tool_result;
use crate::error::McpError;
use crate::naming::{mcp_tool_name, unique_name};
use crate::sse::SseClientTransport;

/// The observation of a call to a tool whose server is not connected (OpenManus's wording).
pub const NOT_CONNECTED: &str = "Not connected to MCP server";

/// How long a call waits for its reply after the server's process exited.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a disconnect waits for a stdio server to exit after each signal.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// Timeouts of an [`McpClients`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpClientOptions {
    /// The longest a server may take to start and complete the MCP handshake (default 30 s).
    pub connect_timeout: Duration,
    /// The longest one tool call may take; `None`: no limit (default 300 s). A call that times
    /// out is cancelled on the server with `notifications/cancelled`.
    pub call_timeout: Option<Duration>,
    /// How a server whose connection goes away mid-run is reconnected.
    pub reconnect: ReconnectPolicy,
}

impl Default for McpClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            call_timeout: Some(Duration::from_secs(300)),
            reconnect: ReconnectPolicy::default(),
        }
    }
}

/// How a server that dies mid-run is reconnected: a stdio server's process is started again, an
/// HTTP or SSE server is connected to again, and its tools are listed again.
///
/// Attempt `n` (from 1) starts after `initial_backoff * 2^(n-1)`, at most `max_backoff`; after
/// `max_attempts` failed attempts in a row the server is gone for good and its tools answer
/// [`NOT_CONNECTED`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Attempts per outage; `0` disables reconnection (default 5).
    pub max_attempts: u32,
    /// The wait before the first attempt (default 200 ms).
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (default 5 s).
    pub max_backoff: Duration,
}

impl ReconnectPolicy {
    /// No reconnection: a server that goes away stays gone.
    #[must_use]
    pub const fn never() -> Self {
        Self {
            max_attempts: 0,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    /// The wait before attempt `attempt` (from 1).
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// A server that could not be connected: logged, reported, and skipped; the others keep working.
#[derive(Debug)]
pub struct McpWarning {
    /// The server id.
    pub server: String,
    /// Why it was skipped.
    pub error: McpError,
}

impl std::fmt::Display for McpWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)
    }
}

/// Our side of one connection: notes `notifications/tools/list_changed`.
struct Handler {
    list_changed: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("openmanus-rs", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// What one server's successive connections share: the last tool listing and the
/// `tools/list_changed` flag.
#[derive(Default)]
struct Shared {
    tools: Mutex<Vec<McpToolDefinition>>,
    list_changed: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

/// A transport that fires `closed` when it ends (the peer closed it, or the service dropped it).
struct Watched<T> {
    inner: T,
    closed: CancellationToken,
}

fn watched<T, E, A>(transport: T, closed: CancellationToken) -> Watched<impl Transport<RoleClient>>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    Watched {
        inner: transport.into_transport(),
        closed,
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        let closed = &self.closed;
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if message.is_none() {
                closed.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// A stdio server's process group, killed when the connection goes away.
struct ChildGroup {
    pgid: Pid,
    exited: CancellationToken,
}

impl ChildGroup {
    fn signal(&self, signal: Signal) {
        // ESRCH (nobody left in the group) is the normal case after an exit.
        let _ = killpg(self.pgid, signal);
    }

    async fn shutdown(&self) {
        let exited = self.exited.clone();
        if tokio::time::timeout(SHUTDOWN_WAIT, exited.cancelled())
            .await
            .is_err()
        {
            self.signal(Signal::SIGTERM);
            if tokio::time::timeout(SHUTDOWN_WAIT, exited.cancelled())
                .await
                .is_err()
            {
                self.signal(Signal::SIGKILL);
                let _ = tokio::time::timeout(SHUTDOWN_WAIT, exited.cancelled()).await;
            }
        }
        // Grandchildren (`npx` → `node`) may outlive the leader.
        self.signal(Signal::SIGKILL);
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// One live connection to one MCP server.
struct Connection {
    id: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// Fires when the connection is gone (process exited, stream closed, or disconnected).
    closed: CancellationToken,
    shared: Arc<Shared>,
    child: Option<ChildGroup>,
    call_timeout: Option<Duration>,
}

impl Connection {
    fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.is_transport_closed()
    }

    /// Kills a stdio server's process group at once (for synchronous drops).
    fn kill_now(&self) {
        self.closed.cancel();
        if let Some(child) = &self.child {
            child.signal(Signal::SIGKILL);
        }
    }

    async fn list_tools(&self) -> Result<Vec<McpToolDefinition>, McpError> {
        if self.is_closed() {
            return Err(self.request_error(NOT_CONNECTED));
        }
        self.shared.list_changed.store(false, Ordering::SeqCst);
        let listing = self.peer.list_all_tools();
        let tools = tokio::select! {
            biased;
            tools = listing => tools.map_err(|e| self.request_error(e))?,
            () = self.closed.cancelled() => return Err(self.request_error(NOT_CONNECTED)),
        };
        *self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tools.clone();
        Ok(tools)
    }

    fn request_error(&self, message: impl std::fmt::Display) -> McpError {
        McpError::Request {
            server: self.id.clone(),
            message: message.to_string(),
        }
    }

    async fn shutdown(&self) {
        let service = self.service.lock().await.take();
        self.closed.cancel();
        if let Some(service) = service
            && let Err(error) = service.cancel().await
        {
            tracing::debug!(server = %self.id, %error, "MCP service task failed on close");
        }
        if let Some(child) = &self.child {
            child.shutdown().await;
        }
        tracing::info!(server = %self.id, "Disconnected from MCP server");
    }

    /// Calls a tool. `Ok(Err(message))`: the request never reached the server (the transport
    /// failed to send it), so it may be retried on a new connection.
    async fn call(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<Result<ToolResult, String>, ToolError> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        if self.is_closed() {
            return Ok(Err(NOT_CONNECTED.to_owned()));
        }
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        // Dropping this future before its reply sends `notifications/cancelled`.
        let call = self.peer.call_tool(params);
        tokio::pin!(call);
        let timeout = async {
            match self.call_timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let reply = tokio::select! {
            biased;
            reply = &mut call => reply,
            () = ctx.cancellation.cancelled() => {
                return Ok(Ok(ToolResult::failure("Error executing tool: the call was cancelled")));
            }
            () = timeout => {
                return Ok(Ok(ToolResult::failure(format!(
                    "Error executing tool: MCP server `{}` did not answer within {:?}",
                    self.id,
                    self.call_timeout.unwrap_or_default()
                ))));
            }
            () = self.closed.cancelled() => {
                match tokio::time::timeout(EXIT_GRACE, &mut call).await {
                    Ok(reply) => reply,
                    Err(_) => {
                        return Ok(Ok(ToolResult::failure(format!(
                            "Error executing tool: MCP server `{}` closed the connection",
                            self.id
                        ))));
                    }
                }
            }
        };
        Ok(match reply {
            Ok(result) => Ok(to_tool_result(result)),
            Err(error @ rmcp::ServiceError::TransportSend(_)) => {
                Err(format!("Error executing tool: {error}"))
            }
            Err(error) => Ok(ToolResult::failure(format!(
                "Error executing tool: {error}"
            ))),
        })
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Starts a stdio server in its own process group, with its stderr going to `tracing`.
fn spawn_stdio(
    id: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<(tokio::process::Child, ChildGroup), McpError> {
    if command.trim().is_empty() {
        return Err(McpError::Config {
            server: id.to_owned(),
            message: "`command` is empty (Server command is required.)".to_owned(),
        });
    }
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let spawn_error = |source| McpError::Spawn {
        server: id.to_owned(),
        command: command.to_owned(),
        source,
    };
    let child = cmd.spawn().map_err(spawn_error)?;
    let pid = child
        .id()
        .ok_or_else(|| spawn_error(std::io::Error::other("the process exited at once")))?;
    let pgid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    Ok((
        child,
        ChildGroup {
            pgid,
            exited: CancellationToken::new(),
        },
    ))
}

/// Parses configured HTTP headers.
fn header_map(
    id: &str,
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, McpError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let header = |m: String| McpError::Config {
            server: id.to_owned(),
            message: m,
        };
        let n = reqwest::header::HeaderName::try_from(name.as_str())
            .map_err(|e| header(format!("bad header name `{name}` in `headers`: {e}")))?;
        let v = reqwest::header::HeaderValue::try_from(value.as_str())
            .map_err(|e| header(format!("bad value of header `{name}` in `headers`: {e}")))?;
        map.insert(n, v);
    }
    Ok(map)
}

/// Connects to one server; its tool listings go to `shared`.
async fn connect(
    config: &McpServerConfig,
    options: &McpClientOptions,
    shared: Arc<Shared>,
) -> Result<Connection, McpError> {
    let id = config.id.clone();
    let handler = Handler {
        list_changed: shared.list_changed.clone(),
        notify: shared.notify.clone(),
    };
    let closed = CancellationToken::new();
    let init_error = |e: rmcp::service::ClientInitializeError| McpError::Initialize {
        server: id.clone(),
        message: e.to_string(),
    };
    let timeout_error = || McpError::ConnectTimeout {
        server: id.clone(),
        timeout: options.connect_timeout,
    };
    let (service, child) = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let (mut child, group) = spawn_stdio(&id, command, args, env, cwd.as_deref())?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(McpError::Spawn {
                    server: id.clone(),
                    command: command.clone(),
                    source: std::io::Error::other("no standard streams"),
                });
            };
            if let Some(stderr) = child.stderr.take() {
                let server = id.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(target: "agent_mcp::server_stderr", server = %server, "{line}");
                    }
                });
            }
            let exited = group.exited.clone();
            let closed_on_exit = closed.clone();
            let server = id.clone();
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(status) => tracing::info!(server = %server, %status, "MCP server exited"),
                    Err(error) => {
                        tracing::warn!(server = %server, %error, "waiting for MCP server")
                    }
                }
                exited.cancel();
                closed_on_exit.cancel();
            });
            let serving = handler.serve(watched((stdout, stdin), closed.clone()));
            let service = match tokio::time::timeout(options.connect_timeout, serving).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(init_error(e)),
                Err(_) => return Err(timeout_error()),
            };
            (service, Some(group))
        }
        McpTransport::StreamableHttp { url, headers } => {
            let custom = header_map(&id, headers)?
                .into_iter()
                .filter_map(|(n, v)| Some((n?, v)));
            // rmcp's default resumes a broken response stream forever, with ever longer waits,
            // so a call in flight to a server that died would hang until its timeout. A few
            // quick resumptions ride out a hiccup; then the call fails, the connection counts
            // as lost, and this client's own reconnection takes over.
            let mut retry = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
            retry.max_times = Some(3);
            retry.base_duration = Duration::from_millis(200);
            retry.max_delay = Some(Duration::from_secs(2));
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                .custom_headers(custom.collect());
            config.retry_config = Arc::new(retry);
            let transport = StreamableHttpClientTransport::<reqwest::Client>::from_config(config);
            let serving = handler.serve(watched(transport, closed.clone()));
            let service = match tokio::time::timeout(options.connect_timeout, serving).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(init_error(e)),
                Err(_) => return Err(timeout_error()),
            };
            (service, None)
        }
        McpTransport::Sse { url, headers } => {
            let headers = header_map(&id, headers)?;
            let opening = async {
                let transport = SseClientTransport::connect(reqwest::Client::new(), url, headers)
                    .await
                    .map_err(|e| McpError::Initialize {
                        server: id.clone(),
                        message: e.to_string(),
                    })?;
                handler
                    .serve(watched(transport, closed.clone()))
                    .await
                    .map_err(init_error)
            };
            let service = match tokio::time::timeout(options.connect_timeout, opening).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(timeout_error()),
            };
            (service, None)
        }
    };
    let peer = service.peer().clone();
    let connection = Connection {
        id: id.clone(),
        peer,
        service: tokio::sync::Mutex::new(Some(service)),
        closed,
        shared,
        child,
        call_timeout: options.call_timeout,
    };
    let listing = connection.list_tools();
    match tokio::time::timeout(options.connect_timeout, listing).await {
        Ok(Ok(tools)) => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            tracing::info!(server = %id, ?names, "Connected to server {id} with tools: {names:?}");
        }
        Ok(Err(e)) => {
            connection.shutdown().await;
            return Err(e);
        }
        Err(_) => {
            connection.shutdown().await;
            return Err(timeout_error());
        }
    }
    Ok(connection)
}

/// Where one server stands.
#[derive(Clone)]
enum State {
    /// This connection is (or was until a moment ago) live.
    Connected(Arc<Connection>),
    /// The connection went away; a reconnection is under way.
    Reconnecting,
    /// Gone for good: disconnected, or reconnection gave up (or is disabled).
    Gone,
}

/// One configured server across its successive connections.
struct Server {
    id: String,
    config: McpServerConfig,
    options: McpClientOptions,
    shared: Arc<Shared>,
    state: watch::Sender<State>,
    /// Fires on disconnect: stops the supervisor.
    shutdown: CancellationToken,
    /// Reconnection attempts made so far, over the server's lifetime.
    attempts: AtomicU32,
}

impl Server {
    /// Connects, and starts the supervisor that reconnects the server when it goes away.
    async fn start(
        config: &McpServerConfig,
        options: &McpClientOptions,
    ) -> Result<Arc<Self>, McpError> {
        let shared = Arc::new(Shared::default());
        let connection = Arc::new(connect(config, options, shared.clone()).await?);
        let (state, _) = watch::channel(State::Connected(connection.clone()));
        let server = Arc::new(Self {
            id: config.id.clone(),
            config: config.clone(),
            options: options.clone(),
            shared,
            state,
            shutdown: CancellationToken::new(),
            attempts: AtomicU32::new(0),
        });
        tokio::spawn(supervise(
            Arc::downgrade(&server),
            server.shutdown.clone(),
            connection,
        ));
        Ok(server)
    }

    /// The connection, if it is live right now.
    fn current(&self) -> Option<Arc<Connection>> {
        match &*self.state.borrow() {
            State::Connected(c) if !c.is_closed() => Some(c.clone()),
            _ => None,
        }
    }

    /// Connected, or being reconnected.
    fn is_alive(&self) -> bool {
        !matches!(&*self.state.borrow(), State::Gone)
    }

    /// The live connection, waiting for a reconnection under way; `None` once the server is
    /// gone for good.
    async fn live(&self) -> Option<Arc<Connection>> {
        let mut state = self.state.subscribe();
        loop {
            match &*state.borrow_and_update() {
                State::Connected(c) if !c.is_closed() => return Some(c.clone()),
                State::Gone => return None,
                State::Connected(_) | State::Reconnecting => {}
            }
            if state.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Waits until the server is live (`true`) or gone for good (`false`).
    async fn ready(&self) -> bool {
        self.live().await.is_some()
    }

    /// Waits until the server is gone for good.
    async fn gone(&self) {
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|s| matches!(s, State::Gone)).await;
    }

    /// Stops the supervisor and closes the connection gracefully.
    async fn stop(&self) {
        self.shutdown.cancel();
        if let State::Connected(connection) = self.state.send_replace(State::Gone) {
            connection.shutdown().await;
        }
    }
}

/// Watches a server's connection; when it goes away (and the server was not disconnected),
/// reconnects with exponential backoff up to the policy's attempt cap.
async fn supervise(server: Weak<Server>, shutdown: CancellationToken, first: Arc<Connection>) {
    let mut connection = first;
    loop {
        tokio::select! {
            () = connection.closed.cancelled() => {}
            () = shutdown.cancelled() => return,
        }
        let Some(server) = server.upgrade() else {
            return;
        };
        if shutdown.is_cancelled() {
            return;
        }
        // Reap what is left of the dead connection (a stdio server's process group).
        connection.shutdown().await;
        let policy = server.options.reconnect.clone();
        if policy.max_attempts == 0 {
            tracing::warn!(server = %server.id, "MCP server went away; reconnection is disabled");
            server.state.send_replace(State::Gone);
            return;
        }
        server.state.send_replace(State::Reconnecting);
        tracing::warn!(server = %server.id, "MCP server went away; reconnecting");
        let mut attempt = 0;
        connection = loop {
            attempt += 1;
            server.attempts.fetch_add(1, Ordering::SeqCst);
            let wait = policy.backoff(attempt);
            let reconnect = async {
                tokio::time::sleep(wait).await;
                connect(&server.config, &server.options, server.shared.clone()).await
            };
            let result = tokio::select! {
                result = reconnect => result,
                () = shutdown.cancelled() => return,
            };
            match result {
                Ok(fresh) => {
                    tracing::info!(server = %server.id, attempt, "MCP server reconnected");
                    break Arc::new(fresh);
                }
                Err(error) if attempt >= policy.max_attempts => {
                    tracing::warn!(
                        server = %server.id, attempt, %error,
                        "MCP server reconnection failed; giving up"
                    );
                    server.state.send_replace(State::Gone);
                    return;
                }
                Err(error) => {
                    tracing::warn!(server = %server.id, attempt, %error, "MCP server reconnection failed");
                }
            }
        };
        // Publish unless a disconnect came first (it cancels `shutdown` before marking Gone).
        let published = server.state.send_if_modified(|state| {
            if shutdown.is_cancelled() {
                false
            } else {
                *state = State::Connected(connection.clone());
                true
            }
        });
        if !published {
            connection.shutdown().await;
            return;
        }
    }
}

/// A set of MCP server connections, each by id, owned by this instance alone (fixes §13 W21).
///
/// Each server tool is offered as an [`McpTool`] named `mcp_{server_id}_{tool}` (sanitised, at
/// most 64 characters, unique). A server that goes away mid-run is reconnected as its
/// [`ReconnectPolicy`] says, and its tools listed again; the [`McpTool`]s find the live
/// connection by server. Dropping the set kills every stdio server's process group;
/// [`McpClients::disconnect_all`] does it gracefully.
#[derive(Default)]
pub struct McpClients {
    servers: Vec<Arc<Server>>,
    options: McpClientOptions,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field("servers", &self.server_ids())
            .field("options", &self.options)
            .finish()
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        for server in &self.servers {
            server.shutdown.cancel();
            if let State::Connected(connection) = server.state.send_replace(State::Gone) {
                connection.kill_now();
            }
        }
    }
}

impl McpClients {
    /// An empty set with these timeouts.
    #[must_use]
    pub fn new(options: McpClientOptions) -> Self {
        Self {
            servers: Vec::new(),
            options,
        }
    }

    /// Connects to every server of `configs` concurrently; a server that fails is logged and
    /// returned as a warning, and the others are kept.
    pub async fn connect_all(
        configs: &[McpServerConfig],
        options: McpClientOptions,
    ) -> (Self, Vec<McpWarning>) {
        let mut clients = Self::new(options);
        let attempts = configs.iter().map(|c| Server::start(c, &clients.options));
        let results = futures::future::join_all(attempts).await;
        let mut warnings = Vec::new();
        for (config, result) in configs.iter().zip(results) {
            match result {
                Ok(server) if !clients.contains(&config.id) => {
                    clients.servers.push(server);
                }
                Ok(server) => {
                    server.stop().await;
                    warnings.push(warning(McpError::Duplicate(config.id.clone()), &config.id));
                }
                Err(error) => warnings.push(warning(error, &config.id)),
            }
        }
        (clients, warnings)
    }

    /// Connects to one more server.
    ///
    /// # Errors
    ///
    /// [`McpError::Duplicate`] when the id is taken; otherwise why the server could not be
    /// started or initialised.
    pub async fn connect(&mut self, config: &McpServerConfig) -> Result<(), McpError> {
        if self.contains(&config.id) {
            return Err(McpError::Duplicate(config.id.clone()));
        }
        let server = Server::start(config, &self.options).await?;
        self.servers.push(server);
        Ok(())
    }

    /// Whether a server with this id is in the set (connected or gone).
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.servers.iter().any(|s| s.id == id)
    }

    /// The ids of the servers, in connection order.
    #[must_use]
    pub fn server_ids(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.id.as_str()).collect()
    }

    /// Whether at least one server is still connected or being reconnected.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        self.servers.iter().any(|s| s.is_alive())
    }

    /// Whether the server `id` is connected or being reconnected.
    #[must_use]
    pub fn is_server_alive(&self, id: &str) -> bool {
        self.servers.iter().any(|s| s.id == id && s.is_alive())
    }

    /// How many reconnection attempts the server `id` has made so far (`None` for an unknown
    /// id).
    #[must_use]
    pub fn reconnect_attempts(&self, id: &str) -> Option<u32> {
        self.server(id).map(|s| s.attempts.load(Ordering::SeqCst))
    }

    fn server(&self, id: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.id == id)
    }

    /// The tools of every server that is connected or being reconnected, from its last
    /// listing, with unique names.
    #[must_use]
    pub fn mcp_tools(&self) -> Vec<Arc<McpTool>> {
        let mut taken = HashSet::new();
        let mut out = Vec::new();
        for server in &self.servers {
            if !server.is_alive() {
                continue;
            }
            let tools = server
                .shared
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for def in tools {
                let name = unique_name(mcp_tool_name(&server.id, &def.name), &mut taken);
                out.push(Arc::new(McpTool {
                    name,
                    original_name: def.name.to_string(),
                    server_id: server.id.clone(),
                    description: def.description.as_deref().unwrap_or_default().to_owned(),
                    parameters: Value::Object((*def.input_schema).clone()),
                    server: Arc::downgrade(server),
                }));
            }
        }
        out
    }

    /// [`McpClients::mcp_tools`] as agent tools, ready for `ToolCollection::add_shared`.
    #[must_use]
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.mcp_tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    /// Lists the tools of every connected server again. Servers that fail are returned as
    /// warnings (and keep their previous listing if they are still connected).
    pub async fn refresh_tools(&self) -> Vec<McpWarning> {
        let listings = self
            .servers
            .iter()
            .filter_map(|s| s.current())
            .map(|c| async move { (c.id.clone(), c.list_tools().await) });
        futures::future::join_all(listings)
            .await
            .into_iter()
            .filter_map(|(id, r)| r.err().map(|e| warning(e, &id)))
            .collect()
    }

    /// Whether a server sent `notifications/tools/list_changed` since its tools were last
    /// listed.
    #[must_use]
    pub fn tools_changed(&self) -> bool {
        self.servers
            .iter()
            .any(|s| s.shared.list_changed.load(Ordering::SeqCst))
    }

    /// Waits until a server sends `notifications/tools/list_changed` (returns at once if one
    /// already did since the last listing).
    pub async fn wait_tools_changed(&self) {
        loop {
            let waits: Vec<_> = self
                .servers
                .iter()
                .map(|s| s.shared.notify.notified())
                .collect();
            let mut waits: Vec<_> = waits.into_iter().map(Box::pin).collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            if self.tools_changed() || self.servers.is_empty() {
                return;
            }
            futures::future::select_all(waits).await;
        }
    }

    /// Waits until the server `id` is gone for good: disconnected, or its connection went away
    /// and reconnection gave up (or is disabled). Returns at once for an unknown id.
    pub async fn wait_server_closed(&self, id: &str) {
        if let Some(server) = self.server(id) {
            server.gone().await;
        }
    }

    /// Waits until the current connection of the server `id` is lost (its process exited, its
    /// stream closed, or it was disconnected); returns at once when it is not connected right
    /// now, or for an unknown id. A reconnection, if the policy allows one, follows.
    pub async fn wait_connection_lost(&self, id: &str) {
        let connection = match self.server(id) {
            Some(server) => match &*server.state.borrow() {
                State::Connected(c) => c.clone(),
                State::Reconnecting | State::Gone => return,
            },
            None => return,
        };
        connection.closed.cancelled().await;
    }

    /// Waits until the server `id` is connected (`true`; after a reconnection, its tools are
    /// listed again) or gone for good (`false`, also for an unknown id).
    pub async fn wait_server_ready(&self, id: &str) -> bool {
        match self.server(id) {
            Some(server) => server.ready().await,
            None => false,
        }
    }

    /// Disconnects the server `id`: stops reconnecting it, closes the session, then stops its
    /// process group (the process gets its standard input closed, then SIGTERM, then SIGKILL).
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownServer`].
    pub async fn disconnect(&mut self, id: &str) -> Result<(), McpError> {
        let Some(index) = self.servers.iter().position(|s| s.id == id) else {
            return Err(McpError::UnknownServer(id.to_owned()));
        };
        let server = self.servers.remove(index);
        server.stop().await;
        Ok(())
    }

    /// Disconnects every server, in connection order.
    pub async fn disconnect_all(&mut self) {
        for server in std::mem::take(&mut self.servers) {
            server.stop().await;
        }
    }
}

fn warning(error: McpError, id: &str) -> McpWarning {
    tracing::warn!(server = %id, %error, "MCP server skipped");
    McpWarning {
        server: id.to_owned(),
        error,
    }
}

/// One tool of one MCP server, as an agent [`Tool`]. It finds its server's live connection at
/// each call (so it keeps working across reconnections, waiting for one under way); once its
/// [`McpClients`] is dropped or disconnected, or the server is gone for good, a call answers
/// `Not connected to MCP server`.
pub struct McpTool {
    name: String,
    original_name: String,
    server_id: String,
    description: String,
    parameters: Value,
    server: Weak<Server>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("original_name", &self.original_name)
            .field("server_id", &self.server_id)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool's name on its server.
    #[must_use]
    pub fn original_name(&self) -> &str {
        &self.original_name
    }

    /// The id of its server.
    #[must_use]
    pub fn server_id(&self) -> &str {
        &self.server_id
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(ToolResult::failure(NOT_CONNECTED));
        };
        // A request the transport failed to send never reached the server: once that connection
        // is seen to be gone, it is sent again on the next one (once).
        let mut retried = false;
        loop {
            let connection = tokio::select! {
                connection = server.live() => connection,
                () = ctx.cancellation.cancelled() => {
                    return Ok(ToolResult::failure("Error executing tool: the call was cancelled"));
                }
            };
            let Some(connection) = connection else {
                return Ok(ToolResult::failure(NOT_CONNECTED));
            };
            tracing::debug!(server = %self.server_id, tool = %self.original_name, "calling MCP tool");
            match connection
                .call(&self.original_name, args.clone(), ctx)
                .await?
            {
                Ok(result) => return Ok(result),
                Err(message) if retried => return Ok(ToolResult::failure(message)),
                Err(message) => {
                    retried = true;
                    let gone =
                        tokio::time::timeout(EXIT_GRACE, connection.closed.cancelled()).await;
                    if gone.is_err() {
                        return Ok(ToolResult::failure(message));
                    }
                    tracing::debug!(server = %self.server_id, "connection lost before sending; retrying");
                }
            }
        }
    }
}
