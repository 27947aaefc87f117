//! # agent-session — one run lifecycle for every front end
//!
//! The command line, and later the server, A2A and the workers, run agents through this crate:
//! it owns what a run needs around the agent (the workspace, the journal, the event bus, the
//! cancellation token) and ends it the same way on every exit path.

pub mod journal;

pub use journal::JournalReader;
pub use journal::{JOURNAL_DIR, Journal, JournalHandle, JournaledModel};
