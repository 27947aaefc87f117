//! [`TokenUsage`]: the tokens a run used and what they cost, as the session store keeps it and
//! as the workers and the HTTP API send it.

use serde::{Deserialize, Serialize};

/// Tokens used by a run, and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// The cost in US dollars at the models' prices; `None` when no call had a priced model.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}
