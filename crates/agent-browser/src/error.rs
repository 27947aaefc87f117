//! Errors of the browser session.

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

/// Why a browser operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// No Chromium executable was found.
    #[error(
        "no Chromium executable found (looked for {looked_for}); install it, e.g. `apt-get install chromium`, or set the executable path (`openmanus doctor` shows what this machine has)"
    )]
    ChromiumNotFound {
        /// The names and paths tried.
        looked_for: String,
    },
    /// Chromium could not be started.
    #[error("could not start Chromium at {}: {source}", path.display())]
    Launch {
        /// The executable.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Chromium did not print its DevTools address in time, or exited first.
    #[error("Chromium did not start: {0}")]
    Startup(String),
    /// A DevTools protocol call failed.
    #[error("{0}")]
    Cdp(#[from] chromiumoxide::error::CdpError),
    /// A page script failed or returned something unexpected.
    #[error("{0}")]
    Script(String),
    /// An operation did not finish in time.
    #[error("timed out after {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// There is no tab with this id.
    #[error("No tab found with page_id: {0}")]
    NoTab(usize),
    /// The browser has been closed.
    #[error("the browser is closed")]
    Closed,
    /// Chromium's process ended during the action (killed, crashed); the next action starts a
    /// new browser.
    #[error(
        "Chromium exited during the action ({0}); the next browser action starts a new browser"
    )]
    Exited(String),
}
