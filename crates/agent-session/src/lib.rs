//! # agent-session — one run lifecycle for every front end
//!
//! The command line, and later the server, A2A and the workers, run agents through this crate
//! and never build or tear down an agent by hand. A [`Session`] owns one agent (built by
//! [`agents::AgentFactory`] from the configuration) or the planning flow, with its workspace,
//! its [journal], its event bus and the cancellation of the run in progress:
//!
//! * [`Session::start`] builds the agent and opens the journal;
//! * [`Session::run`] runs a task and returns a [`RunReport`] — the outcome, the final answer,
//!   the files created or changed, the tokens used; several tasks keep the conversation;
//! * [`Session::canceller`] cancels the run in progress from anywhere (a Ctrl-C handler, an
//!   HTTP request);
//! * [`Session::start_recorded`] and [`Session::resume`] record the session in an
//!   [`agent_store::Store`] (every event, every memory message, every run) and continue a stored
//!   one, its memory restored; [`Session::recorded_events`] publishes each event once stored;
//! * [`Session::close`] shuts the agent down (MCP servers, browser, processes, sandbox) and
//!   closes the journal. A session dropped without `close` still shuts its agent down in the
//!   background.
//!
//! [`replay`] runs a recorded session again — every model request answered from the
//! recording, the tools real — and reports the first step whose tool calls or observations
//! differ (`openmanus replay`, and regression tests of agent crates).

pub mod journal;
mod recorder;
pub mod replay;
mod report;
mod session;

pub use agent_protocol::TokenUsage;
pub use journal::JournalReader;
pub use journal::{JOURNAL_DIR, Journal, JournalHandle, JournaledModel};
pub use recorder::EventFeed;
pub use report::{Ending, RunReport, RunResult};
pub use session::{Canceller, Session, SessionError, Target};

/// The session store sessions are recorded in (re-exported: a front end needs no other
/// dependency to open one).
pub use agent_store as store;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
