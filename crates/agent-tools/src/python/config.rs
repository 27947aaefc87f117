//! Where and how interpreters are started (shared by the interpreter and its sessions).

use std::path::PathBuf;

/// Where and how interpreters are started.
#[derive(Debug, Clone)]
pub(super) struct InterpreterConfig {
    /// The interpreter program (`python3`, or a path).
    pub program: PathBuf,
    /// The working directory; `None` inherits the current one.
    pub cwd: Option<PathBuf>,
    /// Bytes kept of each output stream per call.
    pub output_limit: usize,
    /// A program and its arguments run instead, with the interpreter's command line appended
    /// (empty: none).
    pub launcher: Vec<String>,
}
