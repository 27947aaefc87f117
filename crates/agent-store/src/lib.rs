//! # agent-store — sessions kept in SQLite or PostgreSQL
//!
//! The store every front end records its sessions in, so that a session outlives its process:
//! a [`Store`] is one SQLite database (WAL mode, foreign keys on, a busy timeout; schema
//! migrations in `migrations/`, embedded), or one PostgreSQL database several processes share
//! ([`Store::connect`]; schema in `migrations/postgres/`; [`Store::notifications`] hears the
//! events other processes store), holding
//!
//! * **sessions** ([`SessionRecord`]): the agent kind, the settings (overrides) as JSON, the
//!   workspace, the [`SessionState`], a title (the first task, shortened), timestamps;
//! * **runs** ([`RunRecord`]): the task, how it ended ([`RunState`]), the final answer, the
//!   result text, the files changed, the tokens used. A run left `running` by a process that
//!   died is shown as `interrupted` ([`Store::mark_interrupted_runs`], run at open);
//! * **events** ([`StoredEvent`]): every agent event, flow event and run boundary, with an id
//!   that only grows — the `Last-Event-ID` of a server-sent event stream
//!   ([`Store::events_after`]);
//! * **messages**: the agent's memory, in order, changed in the same transactions as the
//!   events ([`Store::write_batch`]), and read back turn-safe ([`Store::restore_memory`]: an
//!   assistant tool call without its result gets the cancelled observation);
//! * **exchanges** ([`StoredExchange`]): every request sent to a model (as its writer encodes
//!   it: `agent-session` stores the change from the previous request) and its reply or error;
//! * **tasks** ([`TaskRecord`]): the tasks of the protocols a session is served over (A2A), as
//!   the protocol writes them, and where to notify of their changes;
//! * **texts**: every long string ([`MIN_TEXT`] bytes or more) of the rows above, once per
//!   session: an observation that is in two events, the memory and the next request is stored
//!   once and referred to by the hash of its content.
//!
//! It depends on `agent-core` only (messages are `agent_core::Message`; events are JSON), so
//! it sits low in the crate graph. Recording a running session is `agent-session`'s job.
//!
//! ```
//! use agent_store::{EventKind, NewEvent, NewSession, RunState, RunSummary, Store};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let store = Store::open_memory().await?;
//! let session = store.create_session(NewSession::new("manus", "/tmp/work")).await?;
//! let (run, started) = store.begin_run(&session.id, "Say hello").await?;
//! let event = NewEvent::now(Some(run), EventKind::Agent, json!({"type": "step_started"}));
//! let stored = store.append_event(&session.id, event).await?;
//! assert!(stored.id > started.id);
//! let summary = RunSummary {
//!     state: RunState::Finished,
//!     status: "finished".into(),
//!     answer: Some("hello".into()),
//!     text: String::new(),
//!     text_parts: None,
//!     changes: serde_json::Value::Null,
//!     usage: Default::default(),
//! };
//! store.finish_run(run, &summary).await?;
//! let events = store.events_after(&session.id, Some(started.id), 100).await?;
//! assert_eq!(events.len(), 2);
//! assert_eq!(store.session(&session.id).await?.title, "Say hello");
//! # Ok::<(), agent_store::StoreError>(())
//! # }).unwrap();
//! ```

mod batches;
mod db;
mod error;
mod events;
mod exchanges;
mod messages;
mod migrations;
mod notify;
mod owner;
mod runs;
mod script;
mod sessions;
mod store;
mod tasks;
mod texts;
mod types;
mod writer;

pub use error::StoreError;
pub use messages::turn_safe;
pub use notify::{CONTROL_CHANNEL, EVENTS_CHANNEL, StoreNotice};
pub use sessions::{TITLE_CHARS, title_of};
pub use store::{Store, redacted_url};
pub use tasks::TaskRecord;
pub use texts::MIN_TEXT;
pub use types::{
    Batch, EventId, EventKind, ExchangePart, JsonText, MemoryWrite, NewEvent, NewExchange,
    NewSession, RunId, RunRecord, RunState, RunSummary, SessionRecord, SessionState, StoredEvent,
    StoredExchange, TokenUsage, now_ms,
};
pub use writer::{SessionWriter, Written};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
