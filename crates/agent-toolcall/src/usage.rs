//! What one model call used, as the event the run adds up.

use agent_core::AgentEvent;

/// The [`AgentEvent::TokenUsage`] of one call of a model with `price`.
pub(crate) fn usage_event(
    usage: &agent_llm::TokenUsage,
    price: Option<agent_llm::Price>,
) -> AgentEvent {
    AgentEvent::TokenUsage {
        prompt_tokens: usage.prompt_tokens,
        cached_prompt_tokens: usage.cached_prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_usd: price.map(|price| price.cost(usage)),
    }
}
