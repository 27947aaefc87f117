//! The crate's error type.

use std::io;
use std::path::Path;

/// What can go wrong in a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox cannot run on this machine (bwrap missing, namespaces forbidden, ...). The
    /// message says why and how to fix it or disable the sandbox; nothing ran unsandboxed.
    #[error("the sandbox is unavailable: {0}")]
    Unavailable(String),
    /// The sandbox's virtual display cannot run (Xvfb missing, or it failed to start). The
    /// sandbox itself could run; a caller may build it again without a display.
    #[error("the sandbox's display is unavailable: {0}")]
    DisplayUnavailable(String),
    /// A setting is invalid (an unparsable memory limit, a relative work dir, ...).
    #[error("invalid sandbox setting: {0}")]
    InvalidSetting(String),
    /// A path was refused: it leaves the workspace (`..`, an absolute path elsewhere, or a
    /// symbolic link pointing out).
    #[error("path refused: {path}: {reason}")]
    PathRefused {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// A file or directory does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// No shell session has this name.
    #[error("no shell session named {0:?}")]
    NoSuchSession(String),
    /// A shell session with this name already runs.
    #[error("a shell session named {0:?} already exists")]
    SessionExists(String),
    /// The sandbox was cleaned up and can no longer be used.
    #[error("the sandbox was cleaned up")]
    Closed,
    /// An I/O error on `path` (or while running a sandboxed process).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl SandboxError {
    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// An I/O error about `path`, mapping "not found" to [`SandboxError::NotFound`].
    pub(crate) fn at(path: &Path, what: &str, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::NotFound {
            Self::NotFound(path.display().to_string())
        } else {
            Self::io(format!("{what} {}", path.display()), source)
        }
    }
}
