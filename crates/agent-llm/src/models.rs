//! Per-model parameter rules, as data: which models reason (and so take
//! `max_completion_tokens` and no `temperature`), which accept images, and known context
//! windows (informational: only a window set in the settings refuses a request before it is
//! sent, since tables lag behind providers). The first matching rule wins; settings override
//! every field.

/// What the client needs to know about a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelProfile {
    /// Reasoning model: `max_completion_tokens` instead of `max_tokens`, no `temperature`.
    pub reasoning: bool,
    /// Accepts `image_url` content parts.
    pub vision: bool,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
}

/// How a rule matches a model name (compared lower-case, after any `provider/` prefix).
#[derive(Debug, Clone, Copy)]
enum Match {
    Exact(&'static str),
    Prefix(&'static str),
}

struct Rule {
    matches: Match,
    profile: ModelProfile,
}

const fn rule(matches: Match, reasoning: bool, vision: bool, window: u64) -> Rule {
    Rule {
        matches,
        profile: ModelProfile {
            reasoning,
            vision,
            context_window: if window == 0 { None } else { Some(window) },
        },
    }
}

use Match::{Exact, Prefix};

/// The model table. More specific entries come first.
const RULES: &[Rule] = &[
    // OpenAI reasoning families.
    rule(Exact("o1-mini"), true, false, 128_000),
    rule(Exact("o1-preview"), true, false, 128_000),
    rule(Exact("o3-mini"), true, false, 200_000),
    rule(Prefix("o1"), true, true, 200_000),
    rule(Prefix("o3"), true, true, 200_000),
    rule(Prefix("o4"), true, true, 200_000),
    rule(Prefix("gpt-5"), true, true, 400_000),
    // OpenAI chat models.
    rule(Prefix("gpt-4.1"), false, true, 1_047_576),
    rule(Prefix("gpt-4.5"), false, true, 128_000),
    rule(Prefix("gpt-4o"), false, true, 128_000),
    rule(Prefix("gpt-4-turbo"), false, true, 128_000),
    rule(Exact("gpt-4-vision-preview"), false, true, 128_000),
    rule(Prefix("gpt-4-1106"), false, false, 128_000),
    rule(Prefix("gpt-4-0125"), false, false, 128_000),
    rule(Prefix("gpt-4-32k"), false, false, 32_768),
    rule(Prefix("gpt-4"), false, false, 8_192),
    rule(Prefix("gpt-3.5"), false, false, 16_385),
    // Anthropic (through its OpenAI-compatible endpoint or a router).
    rule(Prefix("claude-3-5-haiku"), false, false, 200_000),
    rule(Prefix("claude"), false, true, 200_000),
    // Others commonly used with OpenManus configs.
    rule(Prefix("gemini"), false, true, 1_048_576),
    rule(Prefix("deepseek"), false, false, 128_000),
    rule(Prefix("qwen-vl"), false, true, 0),
    rule(Prefix("qwen2.5-vl"), false, true, 0),
    rule(Prefix("llava"), false, true, 0),
    rule(Prefix("llama3.2-vision"), false, true, 0),
];

/// The cross-region prefixes of Bedrock inference profiles (`us.anthropic.claude-…`).
const BEDROCK_REGIONS: &[&str] = &[
    "us", "us-gov", "eu", "apac", "ap", "jp", "au", "ca", "global",
];

/// The model makers of Bedrock model ids (`anthropic.claude-…`, `meta.llama3-…`).
const BEDROCK_VENDORS: &[&str] = &[
    "anthropic",
    "meta",
    "mistral",
    "amazon",
    "cohere",
    "ai21",
    "deepseek",
    "openai",
    "qwen",
    "writer",
];

/// The part of a lower-case model name that the model and price tables match: what follows any
/// `provider/` prefix (a router's, or the path of a Bedrock ARN), and, in a Bedrock model id,
/// what follows its cross-region prefix and its maker — `us.anthropic.claude-3-5-sonnet-20241022-v2:0`
/// is matched as `claude-3-5-sonnet-20241022-v2:0`.
pub(crate) fn table_key(lower: &str) -> &str {
    let name = lower.rsplit('/').next().unwrap_or(lower);
    let unregioned = match name.split_once('.') {
        Some((region, rest)) if BEDROCK_REGIONS.contains(&region) => rest,
        _ => name,
    };
    match unregioned.split_once('.') {
        Some((vendor, model)) if BEDROCK_VENDORS.contains(&vendor) && !model.is_empty() => model,
        _ => name,
    }
}

/// The profile of `model` from the table (all false / unknown when no rule matches).
#[must_use]
pub fn model_profile(model: &str) -> ModelProfile {
    let lower = model.to_lowercase();
    let name = table_key(&lower);
    RULES
        .iter()
        .find(|r| match r.matches {
            Exact(exact) => name == exact,
            Prefix(prefix) => name.starts_with(prefix),
        })
        .map(|r| r.profile)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_sorts_models_into_families() {
        let cases = [
            ("o1", true, true),
            ("o1-mini", true, false),
            ("o3-mini", true, false),
            ("o3", true, true),
            ("o4-mini", true, true),
            ("gpt-5-mini", true, true),
            ("gpt-4o", false, true),
            ("gpt-4o-mini", false, true),
            ("GPT-4O", false, true),
            ("openai/gpt-4o", false, true),
            ("gpt-4", false, false),
            ("claude-3-7-sonnet-20250219", false, true),
            ("anthropic/claude-sonnet-4", false, true),
            ("deepseek-chat", false, false),
            ("llama3.1:8b", false, false),
            ("my-local-model", false, false),
        ];
        for (model, reasoning, vision) in cases {
            let profile = model_profile(model);
            assert_eq!(
                (profile.reasoning, profile.vision),
                (reasoning, vision),
                "{model}"
            );
        }
        assert_eq!(model_profile("gpt-4o").context_window, Some(128_000));
        assert_eq!(
            model_profile("gpt-4-0125-preview").context_window,
            Some(128_000)
        );
        assert_eq!(model_profile("gpt-4-32k").context_window, Some(32_768));
        assert_eq!(model_profile("gpt-4").context_window, Some(8_192));
        assert!(model_profile("gpt-4.5-preview").vision);
        assert_eq!(model_profile("my-local-model").context_window, None);
    }

    #[test]
    fn bedrock_model_ids_are_matched_by_the_model_they_name() {
        for id in [
            "anthropic.claude-3-5-sonnet-20241022-v2:0",
            "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
            "eu.anthropic.claude-sonnet-4-20250514-v1:0",
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        ] {
            let profile = model_profile(id);
            assert!(profile.vision, "{id}");
            assert_eq!(profile.context_window, Some(200_000), "{id}");
        }
        assert_eq!(table_key("gpt-4.1-mini"), "gpt-4.1-mini");
        assert_eq!(table_key("qwen2.5-vl"), "qwen2.5-vl");
        assert_eq!(
            table_key("mistral.mistral-large-2407-v1:0"),
            "mistral-large-2407-v1:0"
        );
        assert_eq!(table_key("us.unknown.model"), "us.unknown.model");
    }
}
