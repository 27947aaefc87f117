//! Anthropic's Messages API, native (`api_type = "anthropic"`): system prompt, `tool_use` and
//! `tool_result` blocks, images, streaming events, stop reasons, usage (cached input included),
//! errors through the crate's classifier (529 overloaded and 429 with `retry-after` are retried)
//! and prompt caching (`cache_control` on the system prompt and the tools).
//!
//! `wire` is the JSON, `stream` assembles streamed replies, [`AnthropicClient`] sends.

mod client;
mod stream;
mod wire;

pub use client::{AnthropicClient, DEFAULT_ANTHROPIC_BASE_URL};
pub use wire::ANTHROPIC_VERSION;
