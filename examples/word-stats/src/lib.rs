//! # word-stats-agent — an agent crate of its own, on openmanus-rs
//!
//! This is what a downstream crate looks like: one tool ([`WordStats`], its schema derived from
//! [`WordStatsArgs`]), two prompts, and a constructor ([`word_stats_agent`]) that configures a
//! [`ToolCallAgent`] — nothing else. It uses only the public APIs of `agent-toolcall`,
//! `agent-tools` and `agent-llm`.

use std::sync::Arc;

use agent_llm::ChatModel;
use agent_toolcall::ToolCallAgent;
use agent_tools::{Terminate, ToolCollection, ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `word_stats`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WordStatsArgs {
    /// The text to measure.
    pub text: String,
    /// Also list the most frequent words (up to this many).
    #[serde(default)]
    pub top: Option<usize>,
}

/// `word_stats`: counts the words, lines and characters of a text.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordStats;

#[async_trait]
impl TypedTool for WordStats {
    type Args = WordStatsArgs;

    fn name(&self) -> &str {
        "word_stats"
    }

    fn description(&self) -> &str {
        "Count the words, lines and characters of a text, and optionally list its most frequent words."
    }

    async fn call(&self, args: WordStatsArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        if args.text.trim().is_empty() {
            return Err(ToolError::failure(
                "The text is empty: there is nothing to count.",
            ));
        }
        let words: Vec<String> = args
            .text
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect();
        let mut out = format!(
            "words: {}, lines: {}, characters: {}",
            words.len(),
            args.text.lines().count(),
            args.text.chars().count()
        );
        if let Some(top) = args.top.filter(|n| *n > 0) {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for word in words {
                match counts.iter_mut().find(|(w, _)| *w == word) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((word, 1)),
                }
            }
            counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let listed: Vec<String> = counts
                .iter()
                .take(top)
                .map(|(w, n)| format!("{w} ({n})"))
                .collect();
            out.push_str(&format!("\nmost frequent: {}", listed.join(", ")));
        }
        Ok(ToolResult::success(out))
    }
}

/// The system prompt.
pub const SYSTEM_PROMPT: &str = "You measure texts for the user. Use `word_stats` to count; \
never guess a number. When you have answered, call `terminate`.";

/// The per-step prompt.
pub const NEXT_STEP_PROMPT: &str = "Count with `word_stats` if you have not yet, then answer and \
call `terminate`.";

/// The agent: `word_stats` and `terminate`, two prompts, 5 steps.
pub fn word_stats_agent(llm: Arc<dyn ChatModel>) -> ToolCallAgent {
    let mut tools = ToolCollection::new();
    tools.add_tool(WordStats);
    tools.add_tool(Terminate);
    ToolCallAgent::new(llm)
        .with_name("word_stats")
        .with_system_prompt(SYSTEM_PROMPT)
        .with_next_step_prompt(NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(5)
}
