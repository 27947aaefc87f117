//! Our side of an MCP session: the `rmcp` client handler, and what a server's successive
//! connections share (the last tool listing, the `tools/list_changed` flag).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool as McpToolDefinition};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

/// Our side of one connection: notes `notifications/tools/list_changed`.
pub(super) struct Handler {
    pub(super) list_changed: Arc<AtomicBool>,
    pub(super) notify: Arc<Notify>,
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
pub(super) struct Shared {
    pub(super) tools: Mutex<Vec<McpToolDefinition>>,
    pub(super) list_changed: Arc<AtomicBool>,
    pub(super) notify: Arc<Notify>,
}
