//! One Chromium process and the tabs this crate opened in it.
//!
//! Why one file past 700 lines (its tests included): launching or attaching, adopting new tabs, downloads, proxy
//! credentials and the stuck-tab reset all act on the one CDP connection and its tab table,
//! whose invariants (our tabs only, one current tab) hold only if one type owns them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use chromiumoxide::Page;
use chromiumoxide::browser::Browser as CdpBrowser;
use chromiumoxide::cdp::browser_protocol::browser::{
    DownloadProgressState, EventDownloadProgress, EventDownloadWillBegin,
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CloseTargetParams, GetTargetInfoParams};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, Command};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::BrowserError;

/// The flags that keep a headless Chromium quiet on a machine without network access.
pub const QUIET_FLAGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// How to launch Chromium.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// The executable; `None` searches `chromium`, `chromium-browser`, `google-chrome` on `PATH`.
    pub executable: Option<PathBuf>,
    /// Run without a window (default true).
    pub headless: bool,
    /// More command-line flags.
    pub extra_args: Vec<String>,
    /// The viewport width in CSS pixels.
    pub viewport_width: u32,
    /// The viewport height in CSS pixels.
    pub viewport_height: u32,
    /// How long Chromium may take to start.
    pub launch_timeout: Duration,
    /// How long one browser action may take.
    pub action_timeout: Duration,
    /// Attach to a running browser at this DevTools URL (`http://host:port` or `ws://...`)
    /// instead of launching one (`[browser] cdp_url` / `wss_url`). Closing then closes only the
    /// tabs this crate opened.
    pub connect_url: Option<String>,
    /// Turn off web security (`--disable-web-security`, CORS and same-origin checks).
    pub disable_security: bool,
    /// Send traffic through this proxy (`--proxy-server`).
    pub proxy_server: Option<String>,
    /// User name and password the proxy asks for; every tab answers its challenges with them.
    pub proxy_credentials: Option<(String, String)>,
    /// Where clicked downloads are saved; `None`: a `downloads` folder in the private profile.
    pub downloads_dir: Option<PathBuf>,
    /// The same folder as this process sees it, when Chromium runs where paths differ (in a
    /// sandbox whose workspace is mounted elsewhere); `None`: `downloads_dir` itself.
    pub downloads_host_dir: Option<PathBuf>,
    /// How many characters of page markdown `extract_content` hands to the model (default 2000).
    pub max_content_length: usize,
    /// A command prefix Chromium is started under, e.g. a sandbox's
    /// (`agent_sandbox::LocalSandbox::browser_launcher`); empty: started directly. With a
    /// launcher the profile is created by Chromium in the launched environment's `/tmp`.
    pub launcher: Vec<String>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            headless: true,
            extra_args: Vec::new(),
            viewport_width: 1280,
            viewport_height: 1100,
            launch_timeout: Duration::from_secs(30),
            action_timeout: Duration::from_secs(30),
            connect_url: None,
            disable_security: false,
            proxy_server: None,
            proxy_credentials: None,
            downloads_dir: None,
            downloads_host_dir: None,
            max_content_length: 2000,
            launcher: Vec::new(),
        }
    }
}

impl BrowserConfig {
    /// The configuration `[browser]` asks for: `headless`, `disable_security`,
    /// `extra_chromium_args`, `chrome_instance_path`, `cdp_url` (or else `wss_url`) to attach
    /// to a running browser, `[browser.proxy]` and `max_content_length`; the rest keeps its
    /// default.
    #[must_use]
    pub fn from_settings(settings: &agent_config::BrowserSettings) -> Self {
        let proxy = settings.proxy.as_ref();
        Self {
            executable: settings.chrome_instance_path.clone(),
            headless: settings.is_headless(),
            extra_args: settings.extra_chromium_args.clone(),
            connect_url: settings
                .cdp_url
                .clone()
                .or_else(|| settings.wss_url.clone()),
            disable_security: settings.disable_security,
            proxy_server: proxy.map(|p| p.server.clone()),
            proxy_credentials: proxy.and_then(|p| {
                p.username
                    .clone()
                    .map(|user| (user, p.password.clone().unwrap_or_default()))
            }),
            max_content_length: settings.max_content_length,
            ..Self::default()
        }
    }

    /// The executable to launch: the configured one, or the first of `chromium`,
    /// `chromium-browser`, `google-chrome` found on `PATH`.
    ///
    /// # Errors
    ///
    /// [`BrowserError::ChromiumNotFound`].
    pub fn resolve_executable(&self) -> Result<PathBuf, BrowserError> {
        if let Some(path) = &self.executable {
            if path.is_file() {
                return Ok(path.clone());
            }
            return Err(BrowserError::ChromiumNotFound {
                looked_for: path.display().to_string(),
            });
        }
        let names = ["chromium", "chromium-browser", "google-chrome"];
        names
            .iter()
            .find_map(|name| agent_process::find_on_path(name))
            .ok_or_else(|| BrowserError::ChromiumNotFound {
                looked_for: format!("{} on PATH", names.join(", ")),
            })
    }
}

/// What `executable --version` prints, e.g. `Chromium 120.0.6099.224 built on Debian 12.4`:
/// whether the Chromium [`BrowserConfig::resolve_executable`] found runs, and which. It may
/// take at most `limit`; one that hangs is killed. (`openmanus doctor` reports it.)
///
/// # Errors
///
/// [`BrowserError::Launch`] when it cannot be started, [`BrowserError::Timeout`] when it did not
/// answer within `limit`, [`BrowserError::Startup`] when it exited with an error.
pub async fn chromium_version(executable: &Path, limit: Duration) -> Result<String, BrowserError> {
    let mut command = Command::new(executable);
    command.arg("--version");
    let output = agent_process::output_within("chromium --version", &mut command, limit)
        .await
        .map_err(|source| BrowserError::Launch {
            path: executable.to_path_buf(),
            source,
        })?
        .ok_or(BrowserError::Timeout(limit))?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        return Err(BrowserError::Startup(format!(
            "`{} --version` failed ({}): {}",
            executable.display(),
            output.status,
            if stderr.is_empty() { &stdout } else { &stderr }
        )));
    }
    Ok(stdout)
}

/// A tab: its page and the id the model uses for it.
#[derive(Debug, Clone)]
pub struct Tab {
    /// The id shown to the model (`switch_tab` takes it).
    pub id: usize,
    /// The CDP page.
    pub page: Page,
}

/// A file a click downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// Where it was saved.
    pub path: PathBuf,
    /// The URL it came from.
    pub url: String,
}

/// What the download listener has seen: downloads begun (guid → suggested name and URL) and
/// finished (guid → outcome).
#[derive(Debug, Default)]
struct DownloadLog {
    begun: Vec<(String, String, String)>,
    finished: std::collections::HashMap<String, bool>,
}

#[derive(Debug, Default)]
struct Downloads {
    log: std::sync::Mutex<DownloadLog>,
    changed: tokio::sync::Notify,
}

impl Downloads {
    fn begun_count(&self) -> usize {
        self.log
            .lock()
            .map(|log| log.begun.len())
            .unwrap_or_default()
    }

    fn begun_after(&self, count: usize) -> Vec<(String, String, String)> {
        self.log
            .lock()
            .map(|log| log.begun.iter().skip(count).cloned().collect())
            .unwrap_or_default()
    }

    fn finished(&self, guid: &str) -> Option<bool> {
        self.log
            .lock()
            .ok()
            .and_then(|log| log.finished.get(guid).copied())
    }
}

/// How this crate reaches Chromium: a process it launched, or a browser it attached to.
#[derive(Debug)]
enum Process {
    Launched {
        /// Chromium's process group (supervised: registered process-wide, killed on drop).
        group: ProcessGroup,
        profile: Option<tempfile::TempDir>,
    },
    Attached,
}

/// A Chromium with a private temporary profile, in its own process group (or a running browser
/// attached over `connect_url`), and the tabs opened through it. [`Browser::close`] (or
/// dropping it) ends the whole process group of a launched browser; an attached browser keeps
/// running and only loses the tabs this crate opened.
#[derive(Debug)]
pub struct Browser {
    cdp: CdpBrowser,
    handler: JoinHandle<()>,
    listener: Option<JoinHandle<()>>,
    process: Process,
    downloads: std::sync::Arc<Downloads>,
    downloads_dir: PathBuf,
    downloads_host: PathBuf,
    proxy_credentials: Option<(String, String)>,
    tabs: Vec<Tab>,
    current: usize,
    next_tab_id: usize,
    viewport: (u32, u32),
    /// How long a navigation of [`Browser::open_tab`] may take (the config's action timeout).
    action_timeout: Duration,
    closed: bool,
}

impl Browser {
    /// Launches Chromium per `config` (or attaches to `config.connect_url`) and opens one blank
    /// tab.
    ///
    /// # Errors
    ///
    /// [`BrowserError::ChromiumNotFound`], [`BrowserError::Launch`], [`BrowserError::Startup`],
    /// [`BrowserError::Cdp`].
    pub async fn launch(config: &BrowserConfig) -> Result<Self, BrowserError> {
        let (ws_url, mut process) = match &config.connect_url {
            Some(url) => (url.clone(), Process::Attached),
            None => start_chromium(config).await?,
        };
        let handler_config = HandlerConfig {
            viewport: Some(Viewport {
                width: config.viewport_width,
                height: config.viewport_height,
                ..Viewport::default()
            }),
            request_timeout: config.action_timeout,
            ..HandlerConfig::default()
        };
        // chromiumoxide asks an http(s) cdp_url for its WebSocket address with a reqwest client
        // of its own, which needs the process's rustls provider (the workspace's reqwest has
        // none of its own): install ring unless the program installed one.
        agent_llm::http::install_crypto_provider();
        let connected = tokio::time::timeout(
            config.launch_timeout,
            CdpBrowser::connect_with_config(ws_url.clone(), handler_config),
        )
        .await;
        let (cdp, mut handler) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                end_process(&mut process).await;
                return Err(match process {
                    Process::Attached => BrowserError::Startup(format!(
                        "cannot attach to the browser at {ws_url}: {e}"
                    )),
                    Process::Launched { .. } => e.into(),
                });
            }
            Err(_) => {
                end_process(&mut process).await;
                return Err(BrowserError::Startup(format!(
                    "no DevTools connection to {ws_url} within {} s",
                    config.launch_timeout.as_secs_f64()
                )));
            }
        };
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    debug!(error = %e, "CDP handler");
                }
            }
        });
        let downloads_dir = match (&config.downloads_dir, &process) {
            (Some(dir), _) => dir.clone(),
            (
                None,
                Process::Launched {
                    profile: Some(profile),
                    ..
                },
            ) => profile.path().join("downloads"),
            (None, _) => std::env::temp_dir().join("openmanus-downloads"),
        };
        let mut browser = Self {
            cdp,
            handler,
            listener: None,
            process,
            downloads: std::sync::Arc::default(),
            downloads_host: config
                .downloads_host_dir
                .clone()
                .unwrap_or_else(|| downloads_dir.clone()),
            downloads_dir,
            proxy_credentials: config.proxy_credentials.clone(),
            tabs: Vec::new(),
            current: 0,
            next_tab_id: 0,
            viewport: (config.viewport_width, config.viewport_height),
            action_timeout: config.action_timeout,
            closed: false,
        };
        if let Err(e) = browser.watch_downloads().await {
            warn!(error = %e, "downloads are not reported");
        }
        browser.open_tab("about:blank").await?;
        Ok(browser)
    }

    /// Saves downloads under `downloads_dir` (named by their guid, renamed when they finish)
    /// and records them for [`Browser::wait_for_downloads`].
    async fn watch_downloads(&mut self) -> Result<(), BrowserError> {
        std::fs::create_dir_all(&self.downloads_host).map_err(|e| {
            BrowserError::Script(format!(
                "cannot create the downloads folder {}: {e}",
                self.downloads_host.display()
            ))
        })?;
        let mut begin = self.cdp.event_listener::<EventDownloadWillBegin>().await?;
        let mut progress = self.cdp.event_listener::<EventDownloadProgress>().await?;
        self.cdp
            .execute(
                SetDownloadBehaviorParams::builder()
                    .behavior(SetDownloadBehaviorBehavior::AllowAndName)
                    .download_path(self.downloads_dir.display().to_string())
                    .events_enabled(true)
                    .build()
                    .map_err(BrowserError::Script)?,
            )
            .await?;
        let downloads = std::sync::Arc::clone(&self.downloads);
        self.listener = Some(tokio::spawn(async move {
            loop {
                tokio::select! {
                    Some(event) = begin.next() => {
                        if let Ok(mut log) = downloads.log.lock() {
                            log.begun.push((
                                event.guid.clone(),
                                event.suggested_filename.clone(),
                                event.url.clone(),
                            ));
                        }
                        downloads.changed.notify_waiters();
                    }
                    Some(event) = progress.next() => {
                        let done = match event.state {
                            DownloadProgressState::Completed => Some(true),
                            DownloadProgressState::Canceled => Some(false),
                            DownloadProgressState::InProgress => None,
                        };
                        if let Some(done) = done {
                            if let Ok(mut log) = downloads.log.lock() {
                                log.finished.insert(event.guid.clone(), done);
                            }
                            downloads.changed.notify_waiters();
                        }
                    }
                    else => break,
                }
            }
        }));
        Ok(())
    }

    /// The number of downloads begun so far; pass it to [`Browser::wait_for_downloads`].
    #[must_use]
    pub fn download_mark(&self) -> usize {
        self.downloads.begun_count()
    }

    /// The downloads begun after `mark`: waits up to `grace` for one to begin, then for each to
    /// finish (the caller's timeout bounds this), and moves each to its suggested name in the
    /// downloads folder, never over an existing file. Cancelled downloads are left out.
    pub async fn wait_for_downloads(&self, mark: usize, grace: Duration) -> Vec<Download> {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let changed = self.downloads.changed.notified();
            if self.downloads.begun_count() > mark
                || tokio::time::timeout_at(deadline, changed).await.is_err()
            {
                break;
            }
        }
        let mut saved = Vec::new();
        for (guid, suggested, url) in self.downloads.begun_after(mark) {
            let finished = loop {
                let changed = self.downloads.changed.notified();
                if let Some(done) = self.downloads.finished(&guid) {
                    break done;
                }
                changed.await;
            };
            if !finished {
                continue;
            }
            let from = self.downloads_host.join(&guid);
            let to = unique_path(&self.downloads_host, &suggested);
            let name = |path: &Path| {
                self.downloads_dir
                    .join(path.file_name().unwrap_or_default())
            };
            match std::fs::rename(&from, &to) {
                Ok(()) => saved.push(Download {
                    path: name(&to),
                    url,
                }),
                Err(e) => {
                    warn!(error = %e, file = %from.display(), "could not name a download");
                    saved.push(Download {
                        path: name(&from),
                        url,
                    });
                }
            }
        }
        saved
    }

    /// The folder downloads are saved in.
    #[must_use]
    pub fn downloads_dir(&self) -> &Path {
        &self.downloads_dir
    }

    /// The process id of Chromium's main process (also its process group id); `None` for an
    /// attached browser.
    #[must_use]
    pub fn pid(&self) -> Option<i32> {
        match &self.process {
            Process::Launched { group, .. } => Some(group.pgid()),
            Process::Attached => None,
        }
    }

    /// Waits for the end of a launched browser's main process (`None` for an attached
    /// browser): an action can give up as soon as Chromium dies instead of at its timeout.
    #[must_use]
    pub fn exit_watch(&self) -> Option<agent_process::ExitWatch> {
        match &self.process {
            Process::Launched { group, .. } => Some(group.exit_watch()),
            Process::Attached => None,
        }
    }

    /// The private profile directory of a launched browser (removed on close).
    #[must_use]
    pub fn profile_dir(&self) -> Option<&Path> {
        match &self.process {
            Process::Launched { profile, .. } => profile.as_ref().map(tempfile::TempDir::path),
            Process::Attached => None,
        }
    }

    /// Whether the browser is still there: the DevTools connection is open and, for a
    /// launched browser, the process runs.
    pub fn is_alive(&mut self) -> bool {
        if self.closed || self.handler.is_finished() {
            return false;
        }
        match &mut self.process {
            Process::Launched { group, .. } => !group.has_exited(),
            Process::Attached => true,
        }
    }

    /// The viewport size (width, height) in CSS pixels.
    #[must_use]
    pub fn viewport(&self) -> (u32, u32) {
        self.viewport
    }

    /// The open tabs, in opening order.
    #[must_use]
    pub fn tabs(&self) -> &[Tab] {
        &self.tabs
    }

    /// The current tab.
    ///
    /// # Errors
    ///
    /// [`BrowserError::Closed`] when no tab is open.
    pub fn current_page(&self) -> Result<&Page, BrowserError> {
        self.tabs
            .get(self.current)
            .map(|tab| &tab.page)
            .ok_or(BrowserError::Closed)
    }

    /// The id of the current tab.
    #[must_use]
    pub fn current_tab_id(&self) -> Option<usize> {
        self.tabs.get(self.current).map(|tab| tab.id)
    }

    /// Opens `url` in a new tab, which becomes current, and waits (up to the configuration's
    /// action timeout) until its document has loaded.
    ///
    /// # Errors
    ///
    /// [`BrowserError::Cdp`] when the tab cannot be created, [`BrowserError::Script`] when the
    /// navigation fails, [`BrowserError::Timeout`] when the page does not load in time.
    pub async fn open_tab(&mut self, url: &str) -> Result<&Page, BrowserError> {
        let page = self.new_page().await?;
        let id = self.next_tab_id;
        self.next_tab_id += 1;
        self.tabs.push(Tab { id, page });
        self.current = self.tabs.len() - 1;
        let timeout = self.action_timeout;
        let page = self.current_page()?;
        if url != "about:blank" {
            // Our own wait, bounded by the action timeout: chromiumoxide's `goto` gives a
            // load 30 s whatever the configuration says, which a loaded machine can overrun.
            tokio::time::timeout(timeout, crate::loading::navigate(page, url))
                .await
                .map_err(|_| BrowserError::Timeout(timeout))??;
        }
        Ok(page)
    }

    /// Takes in the pages our tabs opened since the last call (a link with `target=_blank`,
    /// `window.open`): each gets a tab id, and the last one becomes current.
    /// Returns the ids of the new tabs.
    ///
    /// # Errors
    ///
    /// [`BrowserError::Cdp`].
    pub async fn adopt_new_pages(&mut self) -> Result<Vec<usize>, BrowserError> {
        let mut adopted = Vec::new();
        for page in self.cdp.pages().await? {
            if self
                .tabs
                .iter()
                .any(|tab| tab.page.target_id() == page.target_id())
            {
                continue;
            }
            // Only pages one of our tabs opened: not the window Chromium starts with, nor the
            // other pages of a browser we attached to.
            let Ok(info) = page.execute(GetTargetInfoParams::default()).await else {
                continue;
            };
            let info = info.result.target_info;
            let opened_by_us = info
                .opener_id
                .as_ref()
                .is_some_and(|opener| self.tabs.iter().any(|tab| tab.page.target_id() == opener));
            if info.r#type != "page" || !opened_by_us {
                continue;
            }
            self.authenticate(&page).await?;
            let id = self.next_tab_id;
            self.next_tab_id += 1;
            self.tabs.push(Tab { id, page });
            self.current = self.tabs.len() - 1;
            adopted.push(id);
        }
        Ok(adopted)
    }

    /// Makes the tab `id` current and brings it to the front.
    ///
    /// # Errors
    ///
    /// [`BrowserError::NoTab`].
    pub async fn switch_tab(&mut self, id: usize) -> Result<(), BrowserError> {
        let position = self
            .tabs
            .iter()
            .position(|tab| tab.id == id)
            .ok_or(BrowserError::NoTab(id))?;
        self.current = position;
        self.tabs[position].page.bring_to_front().await?;
        Ok(())
    }

    /// Closes the current tab; the last remaining tab becomes current (a blank one is opened
    /// when none remains).
    ///
    /// # Errors
    ///
    /// [`BrowserError::Cdp`].
    pub async fn close_tab(&mut self) -> Result<(), BrowserError> {
        if self.current < self.tabs.len() {
            let tab = self.tabs.remove(self.current);
            self.close_target(&tab.page).await;
        }
        if self.tabs.is_empty() {
            self.open_tab("about:blank").await?;
        } else {
            self.current = self.tabs.len() - 1;
            self.tabs[self.current].page.bring_to_front().await?;
        }
        Ok(())
    }

    /// Replaces the current tab by a blank one with the same id, for a tab whose page no longer
    /// answers (a navigation that never finishes, a script in an endless loop). The old page is
    /// closed through the browser, which does not wait for the page itself.
    ///
    /// # Errors
    ///
    /// [`BrowserError::Cdp`] when the new tab cannot be created.
    pub async fn reset_current_tab(&mut self) -> Result<(), BrowserError> {
        let Some(tab) = self.tabs.get(self.current).cloned() else {
            return Err(BrowserError::Closed);
        };
        self.close_target(&tab.page).await;
        let page = self.new_page().await?;
        if let Some(slot) = self.tabs.get_mut(self.current) {
            slot.page = page;
        }
        Ok(())
    }

    /// A blank page, set up to answer proxy challenges.
    async fn new_page(&self) -> Result<Page, BrowserError> {
        let page = self.cdp.new_page("about:blank").await?;
        self.authenticate(&page).await?;
        Ok(page)
    }

    async fn authenticate(&self, page: &Page) -> Result<(), BrowserError> {
        if let Some((username, password)) = &self.proxy_credentials {
            page.authenticate(chromiumoxide::auth::Credentials {
                username: username.clone(),
                password: password.clone(),
            })
            .await?;
        }
        Ok(())
    }

    /// `Target.closeTarget` through the browser connection, bounded to two seconds.
    async fn close_target(&self, page: &Page) {
        let close = self
            .cdp
            .execute(CloseTargetParams::new(page.target_id().clone()));
        match tokio::time::timeout(Duration::from_secs(2), close).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => debug!(error = %e, "Target.closeTarget failed"),
            Err(_) => debug!("Target.closeTarget timed out"),
        }
    }

    /// Closes the browser. A launched browser is asked to quit, then its process group is ended
    /// and its profile removed; an attached browser only loses the tabs this crate opened.
    /// Calling it again does nothing.
    pub async fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let tabs = std::mem::take(&mut self.tabs);
        if let Process::Attached = self.process {
            for tab in &tabs {
                self.close_target(&tab.page).await;
            }
        } else if tokio::time::timeout(Duration::from_secs(2), self.cdp.close())
            .await
            .is_err()
        {
            debug!("Browser.close timed out");
        }
        end_process(&mut self.process).await;
        self.handler.abort();
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.closed {
            // A launched browser's process group is killed by its `ProcessGroup`'s drop.
            self.handler.abort();
            if let Some(listener) = self.listener.take() {
                listener.abort();
            }
        }
    }
}

/// `dir/name`, or `dir/stem (n).ext` with the first free `n`; the name is reduced to its last
/// path component so a download cannot name a file outside `dir`.
fn unique_path(dir: &Path, name: &str) -> PathBuf {
    let name = Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != "..")
        .unwrap_or_else(|| "download".to_owned());
    let first = dir.join(&name);
    if !first.exists() {
        return first;
    }
    let path = Path::new(&name);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (1..)
        .map(|n| dir.join(format!("{stem} ({n}){extension}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// Starts Chromium per `config`, in its own process group with a private profile, and returns
/// its DevTools WebSocket URL.
async fn start_chromium(config: &BrowserConfig) -> Result<(String, Process), BrowserError> {
    let executable = config.resolve_executable()?;
    // Without a launcher the profile is a host temporary directory removed on close; under a
    // launcher (a sandbox with its own /tmp) Chromium creates it there and it goes with the
    // sandbox.
    let (profile, profile_path) = if config.launcher.is_empty() {
        let profile = tempfile::Builder::new()
            .prefix("openmanus-chromium-")
            .tempdir()
            .map_err(|source| BrowserError::Launch {
                path: executable.clone(),
                source,
            })?;
        let path = profile.path().to_path_buf();
        (Some(profile), path)
    } else {
        static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = PathBuf::from(format!(
            "/tmp/openmanus-chromium-{}-{n}",
            std::process::id()
        ));
        (None, path)
    };
    let mut command = match config.launcher.split_first() {
        Some((program, prefix)) => {
            let mut command = Command::new(program);
            command.args(prefix).arg(&executable);
            command
        }
        None => Command::new(&executable),
    };
    command
        .args(QUIET_FLAGS)
        .arg("--remote-debugging-port=0")
        .arg(format!("--user-data-dir={}", profile_path.display()))
        .arg(format!(
            "--window-size={},{}",
            config.viewport_width, config.viewport_height
        ));
    if config.headless {
        command.arg("--headless");
    }
    if config.disable_security {
        command.arg("--disable-web-security");
    }
    if let Some(proxy) = &config.proxy_server {
        command.arg(format!("--proxy-server={proxy}"));
    }
    command
        .args(&config.extra_args)
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let Spawned { group, stderr, .. } =
        ProcessGroup::spawn("chromium", &mut command).map_err(|source| BrowserError::Launch {
            path: config
                .launcher
                .first()
                .map_or_else(|| executable.clone(), PathBuf::from),
            source,
        })?;
    let url = tokio::time::timeout(config.launch_timeout, devtools_url(stderr, &group)).await;
    let mut process = Process::Launched { group, profile };
    match url {
        Ok(Ok(url)) => Ok((url, process)),
        Ok(Err(e)) => {
            end_process(&mut process).await;
            Err(e)
        }
        Err(_) => {
            end_process(&mut process).await;
            Err(BrowserError::Startup(format!(
                "no DevTools address within {} s",
                config.launch_timeout.as_secs_f64()
            )))
        }
    }
}

/// Ends a launched browser's process group and removes its profile; nothing for an attached
/// browser.
async fn end_process(process: &mut Process) {
    if let Process::Launched { group, profile } = process {
        // SIGTERM, up to five seconds for Chromium to exit, then SIGKILL to the group.
        group.shutdown(Duration::from_secs(5)).await;
        if let Some(profile) = profile.take()
            && let Err(e) = profile.close()
        {
            debug!(error = %e, "could not remove the Chromium profile");
        }
    }
}

/// Reads Chromium's stderr until it prints `DevTools listening on ws://...`, then keeps draining
/// it in the background so the pipe never fills.
async fn devtools_url(
    stderr: Option<ChildStderr>,
    group: &ProcessGroup,
) -> Result<String, BrowserError> {
    let stderr = stderr.ok_or_else(|| BrowserError::Startup("no stderr pipe".to_owned()))?;
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(rest) = line.split("DevTools listening on ").nth(1) {
                    let url = rest.trim().to_owned();
                    tokio::spawn(async move {
                        while let Ok(Some(line)) = lines.next_line().await {
                            debug!(target: "chromium", "{line}");
                        }
                    });
                    return Ok(url);
                }
                seen.push(line);
            }
            Ok(None) => {
                let status = group.wait().await;
                return Err(BrowserError::Startup(format!(
                    "Chromium exited ({status:?}): {}",
                    seen.join("\n")
                )));
            }
            Err(e) => return Err(BrowserError::Startup(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// An executable shell script `name` in `dir`.
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn the_version_is_what_chromium_prints() {
        let dir = tempfile::tempdir().unwrap();
        let chromium = script(
            dir.path(),
            "chromium",
            "echo 'Chromium 120.0.6099.224 built on Debian 12.4'",
        );
        let version = chromium_version(&chromium, Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(version, "Chromium 120.0.6099.224 built on Debian 12.4");
        let failing = script(
            dir.path(),
            "broken",
            "echo 'cannot open display' >&2; exit 1",
        );
        let error = chromium_version(&failing, Duration::from_secs(60))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, BrowserError::Startup(text) if text.contains("cannot open display")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_chromium_that_hangs_times_out_and_a_missing_one_cannot_launch() {
        let dir = tempfile::tempdir().unwrap();
        let hangs = script(dir.path(), "chromium", "exec sleep 300");
        let limit = Duration::from_secs(3);
        let error = chromium_version(&hangs, limit).await.unwrap_err();
        assert!(
            matches!(error, BrowserError::Timeout(l) if l == limit),
            "{error}"
        );
        let error = chromium_version(&dir.path().join("none"), limit)
            .await
            .unwrap_err();
        assert!(matches!(error, BrowserError::Launch { .. }), "{error}");
    }

    #[test]
    fn a_missing_chromium_points_to_doctor() {
        let config = BrowserConfig {
            executable: Some(PathBuf::from("/nonexistent/chromium")),
            ..BrowserConfig::default()
        };
        let text = config.resolve_executable().unwrap_err().to_string();
        assert!(text.contains("/nonexistent/chromium"), "{text}");
        assert!(text.contains("`openmanus doctor`"), "{text}");
    }
}
