//! A local imitation of the web for the web tools' tests: search engines and content pages on
//! one HTTP server on 127.0.0.1.
//!
//! [`WebFixtures::start`] binds a free loopback port and serves, on a background task:
//!
//! * **search engines**, each under its own base URL ([`WebFixtures::engine_url`]) so that a
//!   tool's per-engine base URL can point at it:
//!   * Google `GET /google/search?q=&num=`: the desktop layout (`div.g` blocks, an `a` around an
//!     `h3`, `div.VwiC3b` snippets), with an ad block, a "People also ask" box, a link back into
//!     Google and one result wrapped in a `/url?q=` redirect;
//!   * Baidu `GET /baidu/s?wd=&rn=`: `#content_left div.c-container` blocks with `h3 a` links
//!     through Baidu's redirector (`/baidu/link?url=`, which answers with a 302 to the page) and,
//!     on odd results, the real address in the `mu` attribute;
//!   * DuckDuckGo `GET /duckduckgo/html/?q=`: `div.result` blocks after one ad
//!     (`result--ad`), links wrapped as `//duckduckgo.com/l/?uddg=…`;
//!   * Bing `GET /bing/search?q=&first=`: `ol#b_results > li.b_algo` items, 3 per page with a
//!     `Next page` link (7 results in all), an ad (`li.b_ad`), and one click-tracking
//!     `/ck/a?…&u=a1<base64>` link;
//!   * Brave Search API `GET /brave/res/v1/web/search?q=&count=`: JSON, 401 without the header
//!     `X-Subscription-Token:` [`BRAVE_API_KEY`];
//!   * SearXNG `GET /searxng/search?q=&format=json`: JSON.
//!
//!   Result titles read `{Engine} result {i}: {query}` (for example `Google result 1: rust`),
//!   and results point at `/pages/result/{engine}/{i}` unless [`WebFixtures::set_result_urls`]
//!   says otherwise. Each engine can be made to fail ([`EngineBehaviour`]).
//! * **content pages** ([`paths`]): an article full of page furniture, a huge page, pages in
//!   windows-1251 and GBK, a redirect, a redirect loop, a slow page, a 404, a text file and a
//!   PDF.
//!
//! Every request is recorded ([`WebFixtures::requests`]).
//!
//! ```
//! use agent_testkit::web_fixtures::{EngineBehaviour, FixtureEngine, WebFixtures, paths};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let web = WebFixtures::start().await.unwrap();
//! assert!(web.engine_url(FixtureEngine::Google).ends_with("/google"));
//! assert!(web.url(paths::ARTICLE).starts_with("http://127.0.0.1:"));
//! web.set_engine(FixtureEngine::Google, EngineBehaviour::Status(500));
//! # });
//! ```

mod engines;
mod pages;

use crate::server::{LocalServer, Shutdown};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::sync::watch;

pub use pages::{CHINESE_TEXT, CYRILLIC_TEXT, HUGE_PAGE_BYTES, paths};

/// The API key the fixture Brave Search API accepts.
pub const BRAVE_API_KEY: &str = "fixture-brave-key";

/// A search engine the fixture server imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FixtureEngine {
    /// Google's HTML result page.
    Google,
    /// Baidu's HTML result page.
    Baidu,
    /// DuckDuckGo's HTML endpoint.
    DuckDuckGo,
    /// Bing's HTML result page.
    Bing,
    /// The Brave Search JSON API.
    Brave,
    /// A SearXNG instance's JSON API.
    Searxng,
}

impl FixtureEngine {
    /// Every engine.
    pub const ALL: [Self; 6] = [
        Self::Google,
        Self::Baidu,
        Self::DuckDuckGo,
        Self::Bing,
        Self::Brave,
        Self::Searxng,
    ];

    /// The engine's name in lower case (`google`, ..., `duckduckgo`, `searxng`), also its path
    /// prefix on the server.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Google => "google",
            Self::Baidu => "baidu",
            Self::DuckDuckGo => "duckduckgo",
            Self::Bing => "bing",
            Self::Brave => "brave",
            Self::Searxng => "searxng",
        }
    }

    /// The engine's display name (`Google`, `DuckDuckGo`, ...), used in result titles.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Google => "Google",
            Self::Baidu => "Baidu",
            Self::DuckDuckGo => "DuckDuckGo",
            Self::Bing => "Bing",
            Self::Brave => "Brave",
            Self::Searxng => "SearXNG",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

impl fmt::Display for FixtureEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an engine answers searches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EngineBehaviour {
    /// Real-looking results.
    #[default]
    Normal,
    /// A real-looking page that says nothing was found.
    Empty,
    /// Every search fails with this HTTP status (an HTML or JSON error body).
    Status(u16),
    /// The first `times` searches fail with `status`, later ones get results.
    FailFirst {
        /// How many searches fail.
        times: usize,
        /// Their HTTP status.
        status: u16,
    },
    /// A 200 page asking to solve a captcha ("unusual traffic").
    Captcha,
    /// Results, after this delay.
    Delay(Duration),
}

/// One request the fixture server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureRequest {
    /// The HTTP method.
    pub method: String,
    /// The URL path.
    pub path: String,
    /// The query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// The headers as (lower-cased name, value), in order.
    pub headers: Vec<(String, String)>,
}

impl FixtureRequest {
    /// The first value of query parameter `name`.
    #[must_use]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of header `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The engine this request addressed, if any.
    #[must_use]
    pub fn engine(&self) -> Option<FixtureEngine> {
        let first = self.path.trim_start_matches('/').split('/').next()?;
        FixtureEngine::from_name(first)
    }
}

#[derive(Debug, Default)]
struct EngineState {
    behaviour: EngineBehaviour,
    /// Searches answered so far (for `FailFirst`).
    searches: usize,
}

#[derive(Debug)]
struct Inner {
    engines: HashMap<FixtureEngine, EngineState>,
    result_urls: Option<Vec<String>>,
    slow_delay: Duration,
    requests: Vec<FixtureRequest>,
}

#[derive(Debug)]
struct Shared {
    inner: Mutex<Inner>,
    huge_bytes_sent: Arc<AtomicUsize>,
    /// Slow-page requests being answered now, and the most there ever were at once.
    slow_in_flight: AtomicUsize,
    slow_in_flight_max: AtomicUsize,
    received: watch::Sender<usize>,
    shutdown: Shutdown,
    base_url: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves when the server is shutting down.
    async fn stopping(&self) {
        self.shutdown.stopping().await;
    }

    /// Sleeps `delay`, or less when the server shuts down; `false` then.
    async fn pause(&self, delay: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = self.stopping() => false,
        }
    }
}

/// The fixture web server. Serves on a background task until dropped.
#[derive(Debug)]
pub struct WebFixtures {
    shared: Arc<Shared>,
    server: LocalServer,
}

/// The default delay of [`paths::SLOW`].
pub const DEFAULT_SLOW_DELAY: Duration = Duration::from_secs(30);

impl WebFixtures {
    /// Starts a server on 127.0.0.1 on a free port. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// The listening socket could not be bound.
    pub async fn start() -> io::Result<Self> {
        // The port is bound first: the shared state names the base URL.
        let listener = LocalServer::bind(0).await?;
        let addr = listener.local_addr()?;
        let shutdown = Shutdown::default();
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                engines: HashMap::new(),
                result_urls: None,
                slow_delay: DEFAULT_SLOW_DELAY,
                requests: Vec::new(),
            }),
            huge_bytes_sent: Arc::new(AtomicUsize::new(0)),
            slow_in_flight: AtomicUsize::new(0),
            slow_in_flight_max: AtomicUsize::new(0),
            received: watch::Sender::new(0),
            shutdown: shutdown.clone(),
            base_url: format!("http://{addr}"),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let server = LocalServer::start(listener, app, shutdown, false, "web fixtures")?;
        Ok(Self { shared, server })
    }

    /// Stops the server and waits until it has stopped (slow pages are released).
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }

    /// The socket address served.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn base_url(&self) -> String {
        self.shared.base_url.clone()
    }

    /// The absolute URL of `path` (see [`paths`]).
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.shared.base_url, path.trim_start_matches('/'))
    }

    /// The base URL of `engine`, `http://127.0.0.1:PORT/{name}`.
    #[must_use]
    pub fn engine_url(&self, engine: FixtureEngine) -> String {
        self.url(engine.name())
    }

    /// Sets how `engine` answers (and restarts its search count).
    pub fn set_engine(&self, engine: FixtureEngine, behaviour: EngineBehaviour) -> &Self {
        self.shared.lock().engines.insert(
            engine,
            EngineState {
                behaviour,
                searches: 0,
            },
        );
        self
    }

    /// Makes every engine's results point at `urls`, in order (at most that many results);
    /// `None` restores the generated `/pages/result/{engine}/{i}` pages.
    pub fn set_result_urls(&self, urls: Option<Vec<String>>) -> &Self {
        self.shared.lock().result_urls = urls;
        self
    }

    /// Sets how long [`paths::SLOW`] takes to answer (default [`DEFAULT_SLOW_DELAY`]).
    pub fn set_slow_delay(&self, delay: Duration) -> &Self {
        self.shared.lock().slow_delay = delay;
        self
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<FixtureRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests that addressed `engine`.
    #[must_use]
    pub fn engine_requests(&self, engine: FixtureEngine) -> Vec<FixtureRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.engine() == Some(engine))
            .collect()
    }

    /// How many requests asked for `path` (any query).
    #[must_use]
    pub fn hits(&self, path: &str) -> usize {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.path == path)
            .count()
    }

    /// Waits until at least `count` requests have been received in all. Wrap it in a timeout.
    pub async fn wait_for_requests(&self, count: usize) {
        let mut rx = self.shared.received.subscribe();
        // The sender lives in `self.shared`, so `wait_for` only ends when the count is reached.
        let _ = rx.wait_for(|n| *n >= count).await;
    }

    /// The most requests for [`paths::SLOW`] that were being answered at the same time.
    #[must_use]
    pub fn slow_in_flight_max(&self) -> usize {
        self.shared.slow_in_flight_max.load(Ordering::SeqCst)
    }

    /// How many bytes of [`paths::HUGE`] the server has produced so far (over all requests).
    /// The page is generated as it is sent, so a client that stops reading stops it.
    #[must_use]
    pub fn huge_bytes_sent(&self) -> usize {
        self.shared.huge_bytes_sent.load(Ordering::Relaxed)
    }
}

fn html_response(status: StatusCode, body: impl Into<Body>) -> Response {
    response(status, "text/html; charset=utf-8", body)
}

fn response(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn redirect(location: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::FOUND;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn not_found() -> Response {
    html_response(
        StatusCode::NOT_FOUND,
        "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>\
         <h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>",
    )
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, _body) = request.into_parts();
    let query: Vec<(String, String)> = parts
        .uri
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let recorded = FixtureRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
    };
    let count = {
        let mut inner = shared.lock();
        inner.requests.push(recorded.clone());
        inner.requests.len()
    };
    shared.received.send_replace(count);
    tracing::debug!(path = %recorded.path, "web fixture request");

    if let Some(engine) = recorded.engine() {
        return engines::answer(&shared, engine, &recorded).await;
    }
    pages::answer(&shared, &recorded).await
}
