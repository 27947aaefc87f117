//! One Chromium process and the tabs this crate opened in it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_tools::process::GroupRegistration;
use chromiumoxide::Page;
use chromiumoxide::browser::Browser as CdpBrowser;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
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
        }
    }
}

impl BrowserConfig {
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
        let dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        names
            .iter()
            .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| BrowserError::ChromiumNotFound {
                looked_for: format!("{} on PATH", names.join(", ")),
            })
    }
}

/// A tab: its page and the id the model uses for it.
#[derive(Debug, Clone)]
pub struct Tab {
    /// The id shown to the model (`switch_tab` takes it).
    pub id: usize,
    /// The CDP page.
    pub page: Page,
}

/// A running Chromium with a private temporary profile, in its own process group, and the tabs
/// opened through it. [`Browser::close`] (or dropping it) ends the whole process group.
#[derive(Debug)]
pub struct Browser {
    cdp: CdpBrowser,
    handler: JoinHandle<()>,
    child: Child,
    pgid: Option<i32>,
    registration: Option<GroupRegistration>,
    profile: Option<tempfile::TempDir>,
    tabs: Vec<Tab>,
    current: usize,
    next_tab_id: usize,
    viewport: (u32, u32),
    closed: bool,
}

impl Browser {
    /// Launches Chromium per `config` and opens one blank tab.
    ///
    /// # Errors
    ///
    /// [`BrowserError::ChromiumNotFound`], [`BrowserError::Launch`], [`BrowserError::Startup`],
    /// [`BrowserError::Cdp`].
    pub async fn launch(config: &BrowserConfig) -> Result<Self, BrowserError> {
        let executable = config.resolve_executable()?;
        let profile = tempfile::Builder::new()
            .prefix("openmanus-chromium-")
            .tempdir()
            .map_err(|source| BrowserError::Launch {
                path: executable.clone(),
                source,
            })?;
        let mut command = Command::new(&executable);
        command
            .args(QUIET_FLAGS)
            .arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!(
                "--window-size={},{}",
                config.viewport_width, config.viewport_height
            ));
        if config.headless {
            command.arg("--headless");
        }
        command
            .args(&config.extra_args)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| BrowserError::Launch {
            path: executable.clone(),
            source,
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let registration = pgid.map(GroupRegistration::new);
        let mut browser_parts = (pgid, registration, profile);
        let ws_url =
            match tokio::time::timeout(config.launch_timeout, devtools_url(&mut child)).await {
                Ok(Ok(url)) => url,
                Ok(Err(e)) => {
                    kill_group(browser_parts.0, &mut child).await;
                    return Err(e);
                }
                Err(_) => {
                    kill_group(browser_parts.0, &mut child).await;
                    return Err(BrowserError::Startup(format!(
                        "no DevTools address within {} s",
                        config.launch_timeout.as_secs_f64()
                    )));
                }
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
        let (cdp, mut handler) = match CdpBrowser::connect_with_config(ws_url, handler_config).await
        {
            Ok(pair) => pair,
            Err(e) => {
                kill_group(browser_parts.0, &mut child).await;
                return Err(e.into());
            }
        };
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    debug!(error = %e, "CDP handler");
                }
            }
        });
        let mut browser = Self {
            cdp,
            handler,
            child,
            pgid: browser_parts.0.take(),
            registration: browser_parts.1.take(),
            profile: Some(browser_parts.2),
            tabs: Vec::new(),
            current: 0,
            next_tab_id: 0,
            viewport: (config.viewport_width, config.viewport_height),
            closed: false,
        };
        browser.open_tab("about:blank").await?;
        Ok(browser)
    }

    /// The process id of Chromium's main process (also its process group id).
    #[must_use]
    pub fn pid(&self) -> Option<i32> {
        self.pgid
    }

    /// The private profile directory (removed on close).
    #[must_use]
    pub fn profile_dir(&self) -> Option<&Path> {
        self.profile.as_ref().map(tempfile::TempDir::path)
    }

    /// Whether the Chromium process is still running.
    pub fn is_alive(&mut self) -> bool {
        !self.closed && matches!(self.child.try_wait(), Ok(None))
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

    /// Opens `url` in a new tab, which becomes current.
    ///
    /// # Errors
    ///
    /// [`BrowserError::Cdp`] when the tab cannot be created or the page fails to load.
    pub async fn open_tab(&mut self, url: &str) -> Result<&Page, BrowserError> {
        let page = self.cdp.new_page("about:blank").await?;
        let id = self.next_tab_id;
        self.next_tab_id += 1;
        self.tabs.push(Tab { id, page });
        self.current = self.tabs.len() - 1;
        let page = self.current_page()?;
        if url != "about:blank" {
            page.goto(url).await?;
        }
        Ok(page)
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
            tab.page.close().await?;
        }
        if self.tabs.is_empty() {
            self.open_tab("about:blank").await?;
        } else {
            self.current = self.tabs.len() - 1;
            self.tabs[self.current].page.bring_to_front().await?;
        }
        Ok(())
    }

    /// Closes the browser: asks Chromium to quit, then ends its process group and removes the
    /// profile. Calling it again does nothing.
    pub async fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.tabs.clear();
        if tokio::time::timeout(Duration::from_secs(2), self.cdp.close())
            .await
            .is_err()
        {
            debug!("Browser.close timed out");
        }
        kill_group(self.pgid, &mut self.child).await;
        self.handler.abort();
        self.registration = None;
        if let Some(profile) = self.profile.take()
            && let Err(e) = profile.close()
        {
            debug!(error = %e, "could not remove the Chromium profile");
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.closed {
            if let Some(pgid) = self.pgid {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            self.handler.abort();
        }
    }
}

/// Reads Chromium's stderr until it prints `DevTools listening on ws://...`, then keeps draining
/// it in the background so the pipe never fills.
async fn devtools_url(child: &mut Child) -> Result<String, BrowserError> {
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| BrowserError::Startup("no stderr pipe".to_owned()))?;
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
                let status = child.wait().await.ok();
                return Err(BrowserError::Startup(format!(
                    "Chromium exited ({status:?}): {}",
                    seen.join("\n")
                )));
            }
            Err(e) => return Err(BrowserError::Startup(e.to_string())),
        }
    }
}

/// SIGTERM to the group, up to five seconds for the main process to exit, then SIGKILL to the
/// group (stragglers included).
async fn kill_group(pgid: Option<i32>, child: &mut Child) {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    }
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        warn!("Chromium did not exit after SIGTERM; killing it");
    }
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
}
