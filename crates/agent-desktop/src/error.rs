//! The crate's error type.

/// What can go wrong while driving a display.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    /// The X server could not be reached or refused the connection.
    #[error("cannot connect to the display at {socket}: {reason}")]
    Connect {
        /// The socket's host path.
        socket: String,
        /// Why.
        reason: String,
    },
    /// An X11 protocol or connection error (the server may have gone).
    #[error("X11 error: {0}")]
    X11(String),
    /// A key could not be typed.
    #[error("{0}")]
    Keyboard(String),
    /// The screen could not be captured or encoded.
    #[error("{0}")]
    Screenshot(String),
}
