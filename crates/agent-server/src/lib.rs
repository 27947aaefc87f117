//! # agent-server — `openmanus serve`: agents behind an HTTP API and a web page
//!
//! Every session is an [`agent_session::Session`] recorded in the [`agent_store::Store`]: the
//! server builds nothing by hand. A session is created with an agent kind (or the planning
//! flow), gets its own workspace, and runs one task at a time; runs beyond
//! [`ServerOptions::max_concurrent_runs`] wait in line. Its events stream as Server-Sent Events
//! with the store's ids, so a client that reconnects with `Last-Event-ID` misses nothing. A
//! session whose process ended is resumed from the store when it gets a new task.
//!
//! With [`Hub::with_workers`] (`[server] dispatch = "nats"`) the server runs nothing itself:
//! each task goes to the workers (`agent_worker`'s, on NATS JetStream, behind an
//! [`agent_protocol::TaskQueue`]) and the events they publish are stored here and streamed as a
//! local run's ([`remote`]).
//!
//! The page (embedded: `assets/`) lists the sessions and shows a run live: thoughts as
//! markdown rendered on the server and sanitised, tool calls and their observations, the plan
//! of a flow, images and files, token usage; a task box, a cancel button and `ask_human`
//! questions answered in the page.
//!
//! Safe by default: loopback only unless told otherwise; beyond loopback a token is required
//! and tools run in the sandbox; `Host` and `Origin` are checked against DNS rebinding and
//! cross-site requests ([`guard`]); files are served only from inside the session's
//! workspace ([`files`]).

pub mod a2a;
pub mod a2a_routes;
pub mod api;
mod assets;
pub mod error;
pub mod files;
pub mod guard;
pub mod hub;
pub mod live;
pub mod markdown;
pub mod notice;
pub mod options;
pub mod queue;
pub mod remote;
mod server;
pub mod sse;

pub use error::ApiError;
pub use hub::Hub;
pub use options::{DEFAULT_BIND, DEFAULT_MAX_CONCURRENT_RUNS, ServerError, ServerOptions};
pub use server::{Server, router};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
