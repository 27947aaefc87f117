//! What a model call costs: [`Price`] (US dollars per million input, cached input and output
//! tokens), the shipped table of common OpenAI, Anthropic, Google and open-model prices
//! ([`default_price`]), and the cost of one call's [`TokenUsage`](crate::TokenUsage)
//! ([`Price::cost`]).
//!
//! The table is a snapshot of the providers' public list prices (standard tier, no batch
//! discount) and lags behind them; an `[llm]` section's `price` overrides it for that model. A
//! model the table does not know has no price, and its calls have no cost (never a guessed one).

pub use agent_config::Price;

/// How a row matches a model name (lower-case, after any `provider/` prefix).
enum Match {
    Exact(&'static str),
    Prefix(&'static str),
}

use Match::{Exact, Prefix};

/// The shipped prices. More specific rows come first; the first match wins.
const TABLE: &[(Match, Price)] = &[
    // OpenAI.
    (Prefix("gpt-5-nano"), Price::with_cached(0.05, 0.005, 0.40)),
    (Prefix("gpt-5-mini"), Price::with_cached(0.25, 0.025, 2.00)),
    (Prefix("gpt-5"), Price::with_cached(1.25, 0.125, 10.00)),
    (
        Prefix("gpt-4.1-nano"),
        Price::with_cached(0.10, 0.025, 0.40),
    ),
    (Prefix("gpt-4.1-mini"), Price::with_cached(0.40, 0.10, 1.60)),
    (Prefix("gpt-4.1"), Price::with_cached(2.00, 0.50, 8.00)),
    (Prefix("gpt-4o-mini"), Price::with_cached(0.15, 0.075, 0.60)),
    (Prefix("gpt-4o"), Price::with_cached(2.50, 1.25, 10.00)),
    (Prefix("gpt-4-turbo"), Price::new(10.00, 30.00)),
    (Exact("gpt-4"), Price::new(30.00, 60.00)),
    (Prefix("gpt-4-0"), Price::new(30.00, 60.00)),
    (Prefix("gpt-3.5-turbo"), Price::new(0.50, 1.50)),
    (Prefix("o4-mini"), Price::with_cached(1.10, 0.275, 4.40)),
    (Prefix("o3-mini"), Price::with_cached(1.10, 0.55, 4.40)),
    (Prefix("o3"), Price::with_cached(2.00, 0.50, 8.00)),
    (Prefix("o1-mini"), Price::with_cached(1.10, 0.55, 4.40)),
    (Prefix("o1"), Price::with_cached(15.00, 7.50, 60.00)),
    // Anthropic (cache reads at a tenth of the input price).
    (
        Prefix("claude-opus-4-5"),
        Price::with_cached(5.00, 0.50, 25.00),
    ),
    (
        Prefix("claude-opus-4"),
        Price::with_cached(15.00, 1.50, 75.00),
    ),
    (
        Prefix("claude-3-opus"),
        Price::with_cached(15.00, 1.50, 75.00),
    ),
    (
        Prefix("claude-sonnet-4"),
        Price::with_cached(3.00, 0.30, 15.00),
    ),
    (
        Prefix("claude-3-7-sonnet"),
        Price::with_cached(3.00, 0.30, 15.00),
    ),
    (
        Prefix("claude-3-5-sonnet"),
        Price::with_cached(3.00, 0.30, 15.00),
    ),
    (
        Prefix("claude-haiku-4-5"),
        Price::with_cached(1.00, 0.10, 5.00),
    ),
    (
        Prefix("claude-3-5-haiku"),
        Price::with_cached(0.80, 0.08, 4.00),
    ),
    (
        Prefix("claude-3-haiku"),
        Price::with_cached(0.25, 0.03, 1.25),
    ),
    // Google.
    (
        Prefix("gemini-2.5-pro"),
        Price::with_cached(1.25, 0.31, 10.00),
    ),
    (
        Prefix("gemini-2.5-flash-lite"),
        Price::with_cached(0.10, 0.025, 0.40),
    ),
    (
        Prefix("gemini-2.5-flash"),
        Price::with_cached(0.30, 0.075, 2.50),
    ),
    (
        Prefix("gemini-2.0-flash"),
        Price::with_cached(0.10, 0.025, 0.40),
    ),
    // Open-weight models on their makers' APIs.
    (
        Prefix("deepseek-chat"),
        Price::with_cached(0.28, 0.028, 0.42),
    ),
    (
        Prefix("deepseek-reasoner"),
        Price::with_cached(0.28, 0.028, 0.42),
    ),
    (Prefix("qwen-max"), Price::new(1.60, 6.40)),
    (Prefix("qwen-plus"), Price::new(0.40, 1.20)),
    (Prefix("qwen-turbo"), Price::new(0.05, 0.20)),
    (Prefix("mistral-large"), Price::new(2.00, 6.00)),
    (Prefix("mistral-small"), Price::new(0.10, 0.30)),
];

/// The shipped price of `model` (compared lower-case, after any `provider/` prefix, and for a
/// Bedrock model id after its region and maker: `us.anthropic.claude-3-5-sonnet-20241022-v2:0`
/// is priced as `claude-3-5-sonnet`), or `None` when the table does not know it.
#[must_use]
pub fn default_price(model: &str) -> Option<Price> {
    let lower = model.to_lowercase();
    let name = crate::models::table_key(&lower);
    TABLE
        .iter()
        .find(|(matches, _)| match matches {
            Exact(exact) => name == *exact,
            Prefix(prefix) => name.starts_with(prefix),
        })
        .map(|(_, price)| *price)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenUsage;

    fn usage(prompt: u64, cached: u64, completion: u64) -> TokenUsage {
        TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_prompt_tokens: cached,
            ..TokenUsage::default()
        }
    }

    #[test]
    fn cost_prices_each_kind_of_token() {
        let price = Price::with_cached(2.5, 1.25, 10.0);
        // 1M uncached in = $2.50, 1M cached in = $1.25, 1M out = $10.
        let cost = price.cost(&usage(2_000_000, 1_000_000, 1_000_000));
        assert!((cost - 13.75).abs() < 1e-9, "{cost}");
        // Without a cache price, cached input costs the input price.
        let cost = Price::new(3.0, 15.0).cost(&usage(1_000, 1_000, 0));
        assert!((cost - 0.003).abs() < 1e-12, "{cost}");
        // A provider that reports more cached than input tokens is not charged negative input.
        let cost = price.cost(&usage(10, 20, 0));
        assert!((cost - 10.0 * 1.25 / 1e6).abs() < 1e-15, "{cost}");
    }

    #[test]
    fn the_table_knows_common_models_and_nothing_else() {
        let input = |m: &str| default_price(m).map(|p| p.input);
        assert_eq!(input("gpt-4o"), Some(2.5));
        assert_eq!(input("gpt-4o-mini-2024-07-18"), Some(0.15));
        assert_eq!(input("openai/GPT-4.1-mini"), Some(0.40));
        assert_eq!(input("claude-3-7-sonnet-20250219"), Some(3.0));
        assert_eq!(input("claude-opus-4-5-20251101"), Some(5.0));
        assert_eq!(input("claude-opus-4-1-20250805"), Some(15.0));
        assert_eq!(input("anthropic/claude-sonnet-4-5"), Some(3.0));
        assert_eq!(input("deepseek-chat"), Some(0.28));
        assert_eq!(input("gpt-4"), Some(30.0));
        assert_eq!(input("gpt-4-0613"), Some(30.0));
        assert_eq!(input("gpt-4-32k"), None);
        assert_eq!(input("llama3.1:8b"), None);
        assert_eq!(input("my-local-model"), None);
        assert!(TABLE.iter().all(|(_, price)| price.is_valid()));
    }

    #[test]
    fn bedrock_model_ids_find_the_price_of_the_model_they_name() {
        let price = |m: &str| default_price(m).map(|p| (p.input, p.output));
        assert_eq!(
            price("anthropic.claude-3-5-sonnet-20241022-v2:0"),
            Some((3.0, 15.0))
        );
        assert_eq!(
            price("us.anthropic.claude-3-5-sonnet-20241022-v2:0"),
            Some((3.0, 15.0))
        );
        assert_eq!(
            price("eu.anthropic.claude-3-haiku-20240307-v1:0"),
            Some((0.25, 1.25))
        );
        assert_eq!(
            price("apac.anthropic.claude-3-5-haiku-20241022-v1:0"),
            Some((0.80, 4.0))
        );
        assert_eq!(
            price("global.anthropic.claude-opus-4-5-20251101-v1:0"),
            Some((5.0, 25.0))
        );
        assert_eq!(
            price(
                "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0"
            ),
            Some((3.0, 15.0))
        );
        assert_eq!(price("mistral.mistral-large-2407-v1:0"), Some((2.0, 6.0)));
        // Models the table does not know stay unpriced, Bedrock or not.
        assert_eq!(price("amazon.nova-pro-v1:0"), None);
        assert_eq!(price("us.meta.llama3-2-90b-instruct-v1:0"), None);
    }

    #[test]
    fn prices_deserialise_from_the_config_shape() {
        let price: Price =
            serde_json::from_value(serde_json::json!({"input": 1.0, "output": 2.0})).unwrap();
        assert_eq!(price, Price::new(1.0, 2.0));
        assert!(
            serde_json::from_value::<Price>(serde_json::json!({"input": 1.0, "outptu": 2.0}))
                .is_err()
        );
        assert!(!Price::new(-1.0, 2.0).is_valid());
        assert!(!Price::with_cached(1.0, f64::NAN, 2.0).is_valid());
    }
}
