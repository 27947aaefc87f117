//! # agent-desktop — `computer_use` on a virtual X display
//!
//! OpenManus's `computer_use` tool (mouse moves, clicks and drags, scrolling, typing, keys and
//! key combinations, waiting, screenshots) on the virtual display of a sandbox: an Xvfb that
//! agent-sandbox starts inside the sandbox, whose programs (started by the agent's shell) run
//! confined with the workspace. This crate is the other side: an X11 client in this process
//! that connects to the display's socket, sends input through the XTest extension and reads the
//! screen back.
//!
//! - [`ComputerUse`]: the tool, with OpenManus's schema and result texts.
//! - [`XClient`]: the blocking X11 client (x11rb, pure Rust): pointer, buttons, keys, text,
//!   screenshots.
//! - [`keys`]: the key names of the schema and the keysyms they stand for.
//!
//! Why x11rb and not `xdotool`: the client is a library in this process, so an action costs a
//! few requests on one open connection instead of a process start; errors are typed values, not
//! exit codes and text; no argument ever passes through a command line; the screenshot comes
//! over the same connection (no `xwd`/`import`); and nothing besides the X server runs in the
//! sandbox for the tool. x11rb is maintained, has no C dependency and ships the XTest
//! extension. See `docs/desktop.md`.

mod args;
mod error;
pub mod keys;
mod screenshot;
mod tool;
mod x11;

pub use error::DesktopError;
pub use tool::{COMPUTER_USE, ComputerUse};
pub use x11::XClient;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
