//! Compaction: when the next request would pass a set fraction of the model's context window,
//! the older turns of the conversation are replaced — by a summary the model writes in a
//! separate request ([`CompactionStrategy::Summary`]), or by a short note that they were dropped
//! ([`CompactionStrategy::Cut`]). The task (the first user message and the current run's
//! request) and the latest turns are kept; whole turns go, so no tool result loses its call.

use std::fmt;
use std::sync::Arc;

use agent_config::AgentSettings;
pub use agent_config::{
    CompactionStrategy, DEFAULT_COMPACTION_KEEP_TURNS, DEFAULT_COMPACTION_THRESHOLD,
};
use agent_core::{AgentEvent, BaseAgent, Message, Role, turns};
use agent_llm::{ChatModel, ChatRequest};
use tracing::{info, warn};

pub use crate::estimate::{IMAGE_TOKENS, estimate_tokens};
use crate::estimate::{ToolsBound, tokens_within};
use crate::usage::usage_event;

/// The first line of the summary message that replaces the older turns.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier part of this conversation, written to \
save space; the turns it replaces are gone]";

/// The first line of the note that replaces turns dropped without a summary.
pub const CUT_NOTE: &str = "[Earlier turns of this conversation were removed to save space]";

/// The system prompt of the summary request.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You condense the middle of an AI agent's working \
conversation so that the agent can go on with its task without it. Write a factual summary \
for the agent, in the second person, with these parts: what was asked; what has been done so \
far, step by step, with the results that matter (values found, errors met, decisions taken); \
the files created, read or changed, with their paths; what is left to do. Keep exact names, \
paths, commands and numbers. Do not invent anything and do not address the user.";

/// Longest text of one message in the transcript sent for a summary, in characters (the head
/// and the tail are kept).
const TRANSCRIPT_MESSAGE_CHARS: usize = 2_000;

/// How a ToolCallAgent keeps its requests within the model's context window.
#[derive(Clone)]
pub struct Compaction {
    /// What to do past the threshold.
    pub strategy: CompactionStrategy,
    /// The fraction of the context window past which the conversation is compacted.
    pub threshold: f64,
    /// How many of the latest turns are kept as they are.
    pub keep_turns: usize,
    /// The model that writes summaries (`None`: the agent's own).
    pub summary_model: Option<Arc<dyn ChatModel>>,
    /// The context window in tokens (`None`: the model's, [`ChatModel::context_window`]).
    pub context_window: Option<u64>,
}

impl fmt::Debug for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compaction")
            .field("strategy", &self.strategy)
            .field("threshold", &self.threshold)
            .field("keep_turns", &self.keep_turns)
            .field(
                "summary_model",
                &self
                    .summary_model
                    .as_ref()
                    .map(|m| m.model_name().to_owned()),
            )
            .field("context_window", &self.context_window)
            .finish()
    }
}

impl Default for Compaction {
    fn default() -> Self {
        Self {
            strategy: CompactionStrategy::default(),
            threshold: DEFAULT_COMPACTION_THRESHOLD,
            keep_turns: DEFAULT_COMPACTION_KEEP_TURNS,
            summary_model: None,
            context_window: None,
        }
    }
}

impl Compaction {
    /// OpenManus's behaviour: no compaction (only the message cap).
    #[must_use]
    pub fn off() -> Self {
        Self {
            strategy: CompactionStrategy::Off,
            ..Self::default()
        }
    }

    /// `[agent]`'s `compaction`, `compaction_threshold` and `compaction_keep_turns` (a threshold
    /// outside (0, 1] is replaced by the default). The summary model is the factory's to set.
    #[must_use]
    pub fn from_settings(section: &AgentSettings) -> Self {
        let threshold = section.compaction_threshold;
        let threshold = if threshold.is_finite() && threshold > 0.0 && threshold <= 1.0 {
            threshold
        } else {
            warn!(
                threshold,
                "compaction_threshold must be in (0, 1]; using the default"
            );
            DEFAULT_COMPACTION_THRESHOLD
        };
        Self {
            strategy: section.compaction,
            threshold,
            keep_turns: section.compaction_keep_turns,
            summary_model: None,
            context_window: None,
        }
    }

    /// Sets the model that writes summaries.
    #[must_use]
    pub fn with_summary_model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.summary_model = Some(model);
        self
    }

    /// Sets the context window, whatever the model says.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }
}

/// The messages `[start, end)` that compaction would replace: the turns after the current run's
/// request (or the first user message) and before the latest `keep_turns` turns. `None` when
/// there is nothing to replace.
fn compactable(
    messages: &[Message],
    task: Option<usize>,
    keep_turns: usize,
) -> Option<(usize, usize)> {
    let turns = turns(messages);
    let pinned = task
        .or_else(|| messages.iter().position(|m| m.role == Role::User))
        .and_then(|at| turns.iter().position(|t| t.contains(&at)));
    let first = pinned.map_or(0, |turn| turn + 1);
    let last = turns.len().saturating_sub(keep_turns);
    if first >= last {
        return None;
    }
    Some((turns[first].start, turns[last - 1].end))
}

/// `text` with at most `max` characters: the head and the tail around a note.
fn clip(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(total - max / 2).collect();
    format!(
        "{head}\n[... {} characters omitted ...]\n{tail}",
        total - max
    )
}

/// The messages as a plain transcript for the summary request.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let who = match message.role {
            Role::Tool => format!(
                "tool result ({})",
                message.name.as_deref().unwrap_or("tool")
            ),
            role => role.as_str().to_owned(),
        };
        out.push_str(&format!("## {who}\n"));
        if !message.text().is_empty() {
            out.push_str(&clip(message.text(), TRANSCRIPT_MESSAGE_CHARS));
            out.push('\n');
        }
        for call in message.calls() {
            out.push_str(&format!(
                "→ calls {}({})\n",
                call.function.name,
                clip(&call.function.arguments, TRANSCRIPT_MESSAGE_CHARS)
            ));
        }
        if message.base64_image.is_some() {
            out.push_str("(an image)\n");
        }
    }
    out
}

/// The summary request for `messages`, with the task for context.
#[must_use]
pub fn summary_request(task: Option<&Message>, messages: &[Message]) -> ChatRequest {
    let task = task.map_or("", Message::text);
    let prompt = format!(
        "The agent's task:\n{}\n\nThe part of its conversation to summarise:\n\n{}\n\
         Write the summary now.",
        clip(task, TRANSCRIPT_MESSAGE_CHARS),
        transcript(messages)
    );
    ChatRequest::new(vec![Message::user_message(prompt)])
        .with_system(vec![Message::system_message(SUMMARY_SYSTEM_PROMPT)])
}

/// A compaction done: memory changed, and the caller, having built the request again, reports
/// it with [`Compacted::report`].
#[derive(Debug)]
#[must_use]
pub(crate) struct Compacted {
    strategy: &'static str,
    removed: usize,
    before: u64,
}

impl Compacted {
    /// Logs the compaction and emits [`AgentEvent::Compacted`], `after` being the estimate of
    /// the request built again.
    pub(crate) fn report(self, base: &BaseAgent, after: u64) {
        let Self {
            strategy,
            removed,
            before,
        } = self;
        info!(
            strategy,
            removed, before, after, "compacted the conversation"
        );
        base.emit(AgentEvent::Compacted {
            step: base.current_step(),
            strategy: strategy.to_owned(),
            removed_messages: removed,
            tokens_before: before,
            tokens_after: after,
        });
    }
}

/// What [`compact_if_needed`] did: memory compacted (build the request again, then report it),
/// and the estimate of `request` when it was made — or a bound of it when the bound is below
/// the threshold (`None`: compaction is off or the window unknown).
pub(crate) struct Checked {
    pub(crate) compacted: Option<Compacted>,
    pub(crate) estimate: Option<u64>,
}

/// The context window the settings or `llm` give.
pub(crate) fn window_of(settings: &Compaction, llm: &Arc<dyn ChatModel>) -> Option<u64> {
    settings.context_window.or_else(|| llm.context_window())
}

/// Compacts `base`'s memory when `request` would pass the threshold of `settings` (the window
/// is `llm`'s unless the settings give one; `llm` also writes the summary unless the settings
/// name a model).
pub(crate) async fn compact_if_needed(
    settings: &Compaction,
    llm: &Arc<dyn ChatModel>,
    base: &mut BaseAgent,
    request: &ChatRequest,
    tools: &ToolsBound,
) -> Checked {
    if settings.strategy == CompactionStrategy::Off {
        return Checked {
            compacted: None,
            estimate: None,
        };
    }
    let Some(window) = window_of(settings, llm) else {
        return Checked {
            compacted: None,
            estimate: None,
        };
    };
    // Most requests are far below the threshold: a bound from the lengths of their texts
    // says so without serialising them.
    let limit = limit(settings, window);
    let before = tokens_within(request, limit, tools);
    let compacted = compact(settings, llm, base, limit, before).await;
    Checked {
        compacted,
        estimate: Some(before),
    }
}

/// The size of a request past which compaction starts, in tokens.
fn limit(settings: &Compaction, window: u64) -> u64 {
    (window as f64 * settings.threshold) as u64
}

/// The compaction itself, `before` being the request's estimate (or a bound of it, when that
/// is below the limit).
async fn compact(
    settings: &Compaction,
    llm: &Arc<dyn ChatModel>,
    base: &mut BaseAgent,
    limit: u64,
    before: u64,
) -> Option<Compacted> {
    if before <= limit {
        return None;
    }
    let memory = &base.memory;
    let Some((start, end)) =
        compactable(memory.messages(), memory.task_index(), settings.keep_turns)
    else {
        warn!(
            before,
            limit, "the request passes the compaction threshold, but there is nothing to compact"
        );
        return None;
    };
    let mut strategy = settings.strategy;
    let replacement = if strategy == CompactionStrategy::Summary {
        let model = settings
            .summary_model
            .clone()
            .unwrap_or_else(|| Arc::clone(llm));
        let task = memory
            .current_task()
            .or_else(|| memory.first_user_message())
            .cloned();
        let request = summary_request(task.as_ref(), &memory.messages()[start..end]);
        match model.complete(request).await {
            Ok(response) => {
                if let Some(usage) = &response.usage {
                    base.emit(usage_event(usage, model.price()));
                }
                match response.content.filter(|text| !text.trim().is_empty()) {
                    Some(summary) => Some(format!("{SUMMARY_PREFIX}\n{}", summary.trim())),
                    None => {
                        warn!("the summary request returned no text; cutting instead");
                        None
                    }
                }
            }
            Err(error) => {
                warn!(%error, "the summary request failed; cutting instead");
                None
            }
        }
    } else {
        None
    };
    let text = replacement.unwrap_or_else(|| {
        strategy = CompactionStrategy::Cut;
        format!("{CUT_NOTE} ({} messages)", end - start)
    });
    if !base
        .memory
        .replace_turns(start..end, Message::user_message(text))
    {
        warn!(start, end, "compaction could not replace the older turns");
        return None;
    }
    Some(Compacted {
        strategy: match strategy {
            CompactionStrategy::Summary => "summary",
            _ => "cut",
        },
        removed: end - start,
        before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::ToolCall;

    fn turn(id: &str) -> [Message; 2] {
        [
            Message::from_tool_calls(vec![ToolCall::new(id, "bash", "{}")], ""),
            Message::tool_message("out", "bash", id),
        ]
    }

    #[test]
    fn the_task_and_the_latest_turns_are_never_compactable() {
        let mut messages = vec![Message::user_message("task")];
        for id in ["a", "b", "c", "d"] {
            messages.extend(turn(id));
        }
        assert_eq!(compactable(&messages, Some(0), 2), Some((1, 5)));
        assert_eq!(compactable(&messages, None, 2), Some((1, 5)));
        assert_eq!(compactable(&messages, Some(0), 4), None);
        // A later run's request is pinned: only what follows it is compacted.
        messages.push(Message::user_message("second task"));
        messages.extend(turn("e"));
        messages.extend(turn("f"));
        assert_eq!(compactable(&messages, Some(9), 1), Some((10, 12)));
    }

    #[test]
    fn the_transcript_names_calls_and_clips_long_texts() {
        let mut messages = turn("a").to_vec();
        messages[1] = Message::tool_message("x".repeat(5_000), "bash", "a");
        let text = transcript(&messages);
        assert!(text.contains("→ calls bash({})"), "{text}");
        assert!(text.contains("## tool result (bash)"), "{text}");
        assert!(text.contains("[... 3000 characters omitted ...]"), "{text}");
        assert!(text.len() < 2_500);
    }
}
