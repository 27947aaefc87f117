//! [`PythonError`]: why the interpreter could not be used at all.

use thiserror::Error;

/// Why the interpreter could not be used at all. Failures of the code itself are never errors:
/// they are [`Outcome`](crate::python::Outcome)s.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PythonError {
    /// The interpreter program could not be started.
    #[error("could not start the Python interpreter `{program}`{}: {source}", in_dir(.cwd.as_deref()))]
    Spawn {
        /// The program that was run.
        program: String,
        /// The working directory it was given, if any.
        cwd: Option<String>,
        /// Why the operating system refused.
        #[source]
        source: std::io::Error,
    },
    /// The interpreter started but the driver never reported that it was ready.
    #[error("the Python interpreter `{program}` failed to start: {detail}")]
    Startup {
        /// The program that was run.
        program: String,
        /// What went wrong: the driver's own report, the interpreter's stderr, its exit status.
        detail: String,
    },
    /// The interpreter answered something that does not follow the driver protocol, or the
    /// driver failed; the interpreter was stopped and the next call starts a new one.
    #[error("the Python interpreter stopped following the tool's protocol: {0}")]
    Protocol(String),
}

fn in_dir(cwd: Option<&str>) -> String {
    cwd.map(|dir| format!(" in `{dir}`")).unwrap_or_default()
}
