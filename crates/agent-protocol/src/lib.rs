//! # agent-protocol — the vocabulary every openmanus-rs front end speaks
//!
//! One crate for the words the session store, the workers, the web server, A2A and the CLI
//! share, so each is declared once:
//!
//! * how a run ends and what a session is: [`Ending`], [`RunState`], [`SessionState`];
//! * what a stored event is: [`EventKind`], [`RunId`], [`EventId`];
//! * token usage — one call's, a run's tally, a run's as stored and sent: [`TokenUsage`], the
//!   workspace's one usage type, with the JSON of each of those wires in [`usage`];
//! * the workers' messages — [`TaskMessage`], [`TaskEvent`], [`TaskResult`] — and
//!   [`TaskQueue`], the queue they travel on;
//! * JSON-RPC 2.0's error object and standard codes ([`jsonrpc`]), which A2A and ACP both
//!   answer with.
//!
//! It depends on no other crate of the workspace and has no runtime of its own. The JSON of
//! each type is a wire format (HTTP API, SSE, `--json`, A2A, NATS, journals): the workspace's
//! wire snapshot tests pin it byte for byte.
//!
//! ```
//! use agent_protocol::{Ending, RunState, TaskMessage};
//!
//! let task = TaskMessage::new("swe", "Write hello.txt").in_session("s-1");
//! task.check().unwrap();
//! assert_eq!(task.session_id(), "s-1");
//! assert_eq!(Ending::Budget.run_state(), RunState::MaxSteps);
//! assert_eq!("max_steps".parse::<RunState>().unwrap(), RunState::MaxSteps);
//! ```

mod error;
pub mod jsonrpc;
mod queue;
mod task;
pub mod usage;
mod vocabulary;

pub use error::ProtocolError;
pub use queue::{QueueError, TaskEvents, TaskQueue};
pub use task::{TaskEvent, TaskMessage, TaskOptions, TaskResult};
pub use usage::{TokenUsage, round_usd};
pub use vocabulary::{
    Decider, Ending, EventId, EventKind, PermissionDecision, RunId, RunState, SessionState,
    UnknownValue,
};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
