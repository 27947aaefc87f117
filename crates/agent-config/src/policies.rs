//! The behaviour policies of `[agent]`: the places where openmanus-rs deliberately differs from
//! OpenManus in what the model sees, each a named choice whose default is the improved
//! behaviour. They are defined here, once, as the settings vocabulary (with their spellings in
//! the file); `agent-toolcall` re-exports them and its `Policies` holds them.

use serde::Deserialize;

/// What happens to the per-step `next_step_prompt` (`[agent] next_step_prompt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum NextStepPromptMode {
    /// `"append"` — OpenManus: appended to memory as a new user message on every step, so N
    /// steps leave N copies in the conversation.
    #[serde(rename = "append")]
    AppendToMemory,
    /// `"ephemeral"` — sent as the last message of each request but never stored: memory does
    /// not grow with copies of it, and the model still reads it every step (spec §13 W2). The
    /// default.
    #[default]
    #[serde(rename = "ephemeral")]
    Ephemeral,
}

/// How an observation longer than `max_observe` characters is shortened
/// (`[agent] observation_truncation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ObservationTruncation {
    /// `"cut"` — OpenManus: keep the first `max_observe` characters, with no marker.
    #[serde(rename = "cut")]
    Cut,
    /// `"head_and_tail"` — keep the head and the tail (where errors and summaries usually are)
    /// with an explicit `[... N characters omitted ...]` marker between them (spec §13 W15). The
    /// default.
    #[default]
    #[serde(rename = "head_and_tail")]
    HeadAndTail,
}

/// What a text-only reply (no tool call) in `auto` tool-choice mode means
/// (`[agent] auto_text_reply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum AutoTextReply {
    /// `"keep_looping"` — OpenManus: the step acts on nothing and the loop goes on until
    /// `terminate` or the step budget. The default, because agent prompts tell the model to
    /// finish with `terminate`.
    #[default]
    #[serde(rename = "keep_looping")]
    KeepLooping,
    /// `"finish"` — the text is the answer: the agent finishes.
    #[serde(rename = "finish")]
    Finish,
}

/// What happens when the next request would pass `compaction_threshold` of the model's context
/// window (`[agent] compaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum CompactionStrategy {
    /// `"off"` — OpenManus: nothing but the message cap (`max_messages`), which drops whole
    /// turns by count; requests grow until the provider refuses them.
    #[serde(rename = "off")]
    Off,
    /// `"cut"` — the older turns are dropped (the task and the latest turns kept), with no
    /// summary.
    #[serde(rename = "cut")]
    Cut,
    /// `"summary"` — the older turns are replaced by a summary the model writes in a separate
    /// request (what was asked, what was done, files touched, what is left). The default.
    #[default]
    #[serde(rename = "summary")]
    Summary,
}
