//! The settings of one LLM client are the `[llm]` section's types of `agent-config`, re-exported
//! here; what reading them needs the model table for is here.

use std::time::Duration;

pub use agent_config::{ApiKey, ApiType, LlmSettings, ToolCallMode};

use crate::{Price, default_price, model_profile};

/// The price of `settings`' model: `price` when set, else free for a local Ollama server, else
/// the shipped table's ([`default_price`]).
#[must_use]
pub fn effective_price(settings: &LlmSettings) -> Option<Price> {
    match (settings.price, settings.api_type) {
        (Some(price), _) => Some(price),
        (None, ApiType::Ollama) => Some(Price::FREE),
        (None, _) => default_price(&settings.model),
    }
}

/// The context window of `settings`' model: `context_window` when set, else the model table's.
#[must_use]
pub fn effective_context_window(settings: &LlmSettings) -> Option<u64> {
    settings
        .context_window
        .or_else(|| model_profile(&settings.model).context_window)
}

/// A duration in seconds; `None` for 0, negative or non-finite values ("no limit").
/// The most bytes of a reply read from the wire: room for `max_tokens` tokens in a stream's
/// envelope (about 1 KiB a token, as one chunk each), at least 1 MiB. Past it a streamed reply
/// is cut and marked, and a whole one refused: a reply is never held whole whatever its size.
#[must_use]
pub(crate) fn reply_limit(settings: &LlmSettings) -> usize {
    let per_tokens = usize::try_from(settings.max_tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(1024);
    per_tokens.max(1 << 20)
}

pub(crate) fn secs(value: f64) -> Option<Duration> {
    (value.is_finite() && value > 0.0).then(|| Duration::from_secs_f64(value.min(86_400.0)))
}
