//! Named policies for the places where openmanus-rs deliberately differs from OpenManus in what
//! the model sees. [`Policies::openmanus`] reproduces OpenManus; [`Policies::default`] is the
//! improved behaviour.

/// What happens to the per-step `next_step_prompt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NextStepPromptMode {
    /// OpenManus: appended to memory as a new user message on every step, so N steps leave N
    /// copies in the conversation.
    AppendToMemory,
    /// Sent as the last message of each request but never stored: memory does not grow with
    /// copies of it, and the model still reads it every step (spec §13 W2). The default.
    #[default]
    Ephemeral,
}

/// How an observation longer than `max_observe` characters is shortened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ObservationTruncation {
    /// OpenManus: keep the first `max_observe` characters, with no marker.
    Cut,
    /// Keep the head and the tail (where errors and summaries usually are) with an explicit
    /// `[... N characters omitted ...]` marker between them (spec §13 W15). The default.
    #[default]
    HeadAndTail,
}

/// What a text-only reply (no tool call) in `auto` mode means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoTextReply {
    /// OpenManus: the step acts on nothing and the loop goes on until `terminate` or the step
    /// budget. The default, because agent prompts tell the model to finish with `terminate`.
    #[default]
    KeepLooping,
    /// The text is the answer: the agent finishes.
    Finish,
}

/// The set of behaviour policies of a ToolCallAgent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policies {
    /// Per-step prompt handling.
    pub next_step_prompt: NextStepPromptMode,
    /// Long-observation handling.
    pub observation_truncation: ObservationTruncation,
    /// Text-only replies in `auto` mode.
    pub auto_text_reply: AutoTextReply,
}

impl Policies {
    /// OpenManus's behaviour, for comparison runs and transcripts that must match it.
    #[must_use]
    pub fn openmanus() -> Self {
        Self {
            next_step_prompt: NextStepPromptMode::AppendToMemory,
            observation_truncation: ObservationTruncation::Cut,
            auto_text_reply: AutoTextReply::KeepLooping,
        }
    }
}

/// Shortens `observation` to `max_chars` characters (Unicode scalar values, as Python slices)
/// according to `mode`. `HeadAndTail` keeps `max_chars` characters of the original plus the
/// marker.
#[must_use]
pub fn truncate_observation(
    observation: String,
    max_chars: usize,
    mode: ObservationTruncation,
) -> String {
    let total = observation.chars().count();
    if total <= max_chars {
        return observation;
    }
    match mode {
        ObservationTruncation::Cut => observation.chars().take(max_chars).collect(),
        ObservationTruncation::HeadAndTail => {
            let head = max_chars.div_ceil(2);
            let tail = max_chars - head;
            let omitted = total - max_chars;
            let mut out: String = observation.chars().take(head).collect();
            out.push_str(&format!("\n[... {omitted} characters omitted ...]\n"));
            out.extend(observation.chars().skip(total - tail));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_the_first_characters_without_a_marker() {
        assert_eq!(
            truncate_observation("héllo wörld".into(), 4, ObservationTruncation::Cut),
            "héll"
        );
        assert_eq!(
            truncate_observation("short".into(), 10, ObservationTruncation::Cut),
            "short"
        );
    }

    #[test]
    fn head_and_tail_keeps_both_ends_and_says_how_much_is_gone() {
        let text: String = ('a'..='z').collect();
        assert_eq!(
            truncate_observation(text, 6, ObservationTruncation::HeadAndTail),
            "abc\n[... 20 characters omitted ...]\nxyz"
        );
        assert_eq!(
            truncate_observation("ééééé".into(), 3, ObservationTruncation::HeadAndTail),
            "éé\n[... 2 characters omitted ...]\né"
        );
    }
}
