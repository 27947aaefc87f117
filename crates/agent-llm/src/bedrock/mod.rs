//! Amazon Bedrock through the Converse API and the official AWS SDK for Rust (`api_type =
//! "aws"`, the `bedrock` cargo feature): system prompt, `toolUse`/`toolResult` blocks, images,
//! stop reasons, usage, errors through the crate's classifier (throttling 429 and 5xx retried by
//! the crate's policy; the SDK's own retries are off). Replies are streamed (ConverseStream,
//! text handed to the event bus as it arrives) unless the settings say `stream = false`
//! (Converse, the whole reply at once).

mod client;
mod stream;
mod wire;

pub use client::BedrockClient;
