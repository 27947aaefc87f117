//! The server: the routes, the guards around them, and serving until shut down.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::middleware;
use axum::routing::{get, post};
use tokio::net::TcpListener;

use crate::a2a::A2a;
use crate::a2a_routes;
use crate::api::{self, AppState};
use crate::assets;
use crate::guard::{self, Access};
use crate::hub::Hub;
use crate::options::{ServerError, ServerOptions};

/// A server bound to its address, ready to serve.
pub struct Server {
    listener: TcpListener,
    router: Router,
    hub: Arc<Hub>,
    a2a: Arc<A2a>,
    idle_timeout: Option<std::time::Duration>,
}

impl Server {
    /// Checks `options` and binds the address.
    ///
    /// # Errors
    ///
    /// A non-loopback address without a token, a weak token, an address that cannot be bound.
    pub async fn bind(options: &ServerOptions, hub: Arc<Hub>) -> Result<Self, ServerError> {
        options.validate()?;
        let listener =
            TcpListener::bind(options.bind)
                .await
                .map_err(|source| ServerError::Bind {
                    address: options.bind,
                    source,
                })?;
        let access = Arc::new(Access {
            token: options.token.clone(),
            loopback: options.is_loopback(),
            allowed_hosts: options.allowed_hosts.clone(),
            allowed_origins: options.allowed_origins.clone(),
        });
        let a2a = Arc::new(A2a::new(Arc::clone(&hub), access.token.is_some()));
        Ok(Self {
            listener,
            router: routes(Arc::clone(&hub), access, Arc::clone(&a2a)),
            hub,
            a2a,
            idle_timeout: options.idle_timeout,
        })
    }

    /// The address it listens on.
    ///
    /// # Errors
    ///
    /// The socket cannot tell.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then closes every live session.
    ///
    /// # Errors
    ///
    /// Serving failed.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let hub = Arc::clone(&self.hub);
        let sweeper = self
            .idle_timeout
            .map(|max_idle| tokio::spawn(sweep_idle(Arc::clone(&self.hub), max_idle)));
        // A store shared with other servers: their runs of a session reach this one's
        // clients through the store's notices.
        let follower = match self.hub.store().notifications().await {
            Ok(Some(notices)) => Some(tokio::spawn(follow_store(Arc::clone(&self.hub), notices))),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(
                    %error,
                    "cannot listen for the shared store's notices: other servers' runs reach \
                     this one's event streams only when a client reconnects"
                );
                None
            }
        };
        let result = axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                // Event streams never end by themselves: end them so the connections close.
                hub.begin_shutdown();
            })
            .await
            .map_err(ServerError::Serve);
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        if let Some(follower) = follower {
            follower.abort();
        }
        // The A2A tasks still going end as failed and are stored before the sessions close.
        self.a2a.shutdown().await;
        self.hub.close_all().await;
        result
    }
}

/// Hands the shared store's notices to the hub until the server stops.
async fn follow_store(
    hub: Arc<Hub>,
    mut notices: tokio::sync::broadcast::Receiver<agent_store::StoreNotice>,
) {
    loop {
        match notices.recv().await {
            Ok(notice) => hub.on_store_notice(notice),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                hub.on_store_notice(agent_store::StoreNotice::Missed);
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Closes idle live sessions now and then, until the server shuts down.
async fn sweep_idle(hub: Arc<Hub>, max_idle: std::time::Duration) {
    let every = (max_idle / 4).clamp(
        std::time::Duration::from_millis(250),
        std::time::Duration::from_secs(60),
    );
    let mut closing = hub.closing();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = closing.wait_for(|closing| *closing) => return,
        }
        let closed = hub.evict_idle(max_idle).await;
        if closed > 0 {
            tracing::debug!(closed, "closed idle sessions");
        }
    }
}

/// Every route: the page, the API and A2A (`/a2a`, `POST /`, the agent card), the API and
/// A2A's JSON-RPC behind the token, everything behind the Host and Origin checks.
pub fn router(hub: Arc<Hub>, access: Arc<Access>) -> Router {
    let a2a = Arc::new(A2a::new(Arc::clone(&hub), access.token.is_some()));
    routes(hub, access, a2a)
}

/// [`router`] over this A2A side (the server keeps it, to store its tasks at shutdown).
fn routes(hub: Arc<Hub>, access: Arc<Access>, a2a: Arc<A2a>) -> Router {
    let state = AppState {
        a2a,
        hub,
        access: Arc::clone(&access),
    };
    let protected = Router::new()
        .route(
            "/api/sessions",
            get(api::list_sessions).post(api::create_session),
        )
        .route(
            "/api/sessions/{id}",
            get(api::get_session).delete(api::delete_session),
        )
        .route("/api/sessions/{id}/tasks", post(api::post_task))
        .route("/api/sessions/{id}/cancel", post(api::cancel))
        .route("/api/sessions/{id}/answer", post(api::answer))
        .route("/api/sessions/{id}/events", get(api::events))
        .route("/api/sessions/{id}/files", get(api::list_files))
        .route("/api/sessions/{id}/files/{*path}", get(api::get_file))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&access),
            guard::token,
        ));
    Router::new()
        .route("/", get(assets::index).post(a2a_routes::rpc))
        .route("/a2a", post(a2a_routes::rpc))
        .route("/.well-known/agent-card.json", get(a2a_routes::card))
        .route("/.well-known/agent.json", get(a2a_routes::card))
        .route("/app.js", get(assets::script))
        .route("/app.css", get(assets::style))
        .route("/api/health", get(api::health))
        .route("/api/login", post(api::login))
        .merge(protected)
        .layer(middleware::from_fn_with_state(access, guard::site))
        .with_state(state)
}
