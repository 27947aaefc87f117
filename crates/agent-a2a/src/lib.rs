//! # agent-a2a — the Agent2Agent protocol
//!
//! A2A lets agents hand work to each other over JSON-RPC: a client sends a message, the agent
//! answers with a *task* whose status moves `submitted → working → completed` (or
//! `input-required` when it needs the client, `canceled`, `failed`) and whose *artifacts* hold
//! the result; `message/stream` streams the status changes and artifacts as Server-Sent Events.
//!
//! This crate holds the protocol, not a server: [`types`] (dialect-free objects), [`Dialect`]
//! (the JSON of protocol 0.2/0.3 — a2a-sdk 0.2.5 as OpenManus pins it — and of protocol 1.0),
//! [`rpc`] (JSON-RPC envelopes and A2A's error codes), [`push`] (push notification settings),
//! [`card`] (the Agent Card), a
//! [`client`], and the [`tool`] `a2a_call` that hands a sub-task to another agent. The server
//! is `agent-server`'s `a2a` module; docs/a2a.md shows both sides.

pub mod card;
pub mod client;
pub mod codec;
pub mod push;
pub mod rpc;
pub mod time;
pub mod tool;
pub mod types;

pub use card::{CardInfo, Skill, agent_card, endpoint_of};
pub use client::{A2aClient, ClientError, Endpoint};
pub use codec::{Dialect, Method, PROTOCOL_LEGACY, PROTOCOL_V1};
pub use push::{PushConfig, PushOp, PushQuery};
pub use rpc::{A2aErrors, Request, RpcError};
pub use tool::{A2A_CALL, A2aCall, A2aPeer};
pub use types::{
    Artifact, ArtifactUpdate, Message, Part, Role, SendParams, StatusUpdate, StreamEvent, Task,
    TaskQuery, TaskState, TaskStatus, joined_text,
};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
