//! Named policies for the places where openmanus-rs deliberately differs from OpenManus in what
//! the model sees. [`Policies::openmanus`] reproduces OpenManus; [`Policies::default`] is the
//! improved behaviour; [`Policies::from_settings`] reads them from `[agent]`.
//!
//! The three policy enums are defined once, in `agent-config` (they are the vocabulary of the
//! `[agent]` section, with their spellings in the file), and re-exported here: configuration
//! sits below this crate, so the arrow points one way (agent-toolcall → agent-config) and no
//! second copy needs mapping.

use agent_config::AgentSettings;
pub use agent_config::{
    AutoTextReply, DEFAULT_MAX_OBSERVATION_BYTES, NextStepPromptMode, ObservationTruncation,
    RequestTrimming,
};

/// The set of behaviour policies of a ToolCallAgent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policies {
    /// Per-step prompt handling.
    pub next_step_prompt: NextStepPromptMode,
    /// Long-observation handling.
    pub observation_truncation: ObservationTruncation,
    /// Text-only replies in `auto` mode.
    pub auto_text_reply: AutoTextReply,
    /// Largest single observation in bytes, applied after `max_observe` whatever it is (head
    /// and tail kept, with a note of what was cut); `0`: no cap. A safety bound rather than a
    /// behaviour: [`Policies::openmanus`] keeps it too.
    pub max_observation_bytes: usize,
    /// Which trimming policies shorten what each request resends (see
    /// [`crate::trimming`]); [`RequestTrimming::OPENMANUS`]: none.
    pub request_trimming: RequestTrimming,
}

impl Default for Policies {
    fn default() -> Self {
        Self {
            next_step_prompt: NextStepPromptMode::default(),
            observation_truncation: ObservationTruncation::default(),
            auto_text_reply: AutoTextReply::default(),
            max_observation_bytes: DEFAULT_MAX_OBSERVATION_BYTES,
            request_trimming: RequestTrimming::default(),
        }
    }
}

impl Policies {
    /// OpenManus's behaviour, for comparison runs and transcripts that must match it.
    #[must_use]
    pub fn openmanus() -> Self {
        Self {
            next_step_prompt: NextStepPromptMode::AppendToMemory,
            observation_truncation: ObservationTruncation::Cut,
            auto_text_reply: AutoTextReply::KeepLooping,
            max_observation_bytes: DEFAULT_MAX_OBSERVATION_BYTES,
            request_trimming: RequestTrimming::OPENMANUS,
        }
    }

    /// The policies of the `[agent]` section (`next_step_prompt`, `observation_truncation`,
    /// `auto_text_reply`, `max_observation_bytes`, `request_trimming`); a key the file does not
    /// set keeps its default.
    #[must_use]
    pub fn from_settings(section: &AgentSettings) -> Self {
        Self {
            next_step_prompt: section.next_step_prompt,
            observation_truncation: section.observation_truncation,
            auto_text_reply: section.auto_text_reply,
            max_observation_bytes: section.max_observation_bytes,
            request_trimming: section.request_trimming,
        }
    }
}

/// The run limits of the `[agent]` section (`max_run_tokens`, `max_run_cost`,
/// `max_run_seconds`); a cost that is negative or not a number is no limit.
#[must_use]
pub fn budget_from_settings(section: &AgentSettings) -> agent_core::Budget {
    agent_core::Budget {
        max_tokens: section.max_run_tokens,
        max_cost_usd: section
            .max_run_cost
            .filter(|cost| cost.is_finite() && *cost >= 0.0),
        max_duration: section.max_run_seconds.map(std::time::Duration::from_secs),
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

/// Caps `observation` at `max_bytes` bytes *as sent* — in the JSON of the request, where a
/// control character takes up to six bytes (`\u0000`): the head and the tail are kept (split on
/// character boundaries) around a note saying how many bytes were cut. Binary output (mostly
/// control characters) is first replaced by a summary of it: its size and a hex head. Shorter
/// observations, and any when `max_bytes` is 0, are returned as they are.
#[must_use]
pub fn cap_observation_bytes(observation: String, max_bytes: usize) -> String {
    let observation = summarize_binary(observation);
    let total = observation.len();
    let sent = sent_len(&observation);
    if max_bytes == 0 || sent <= max_bytes {
        return observation;
    }
    let head_budget = max_bytes.div_ceil(2);
    let head = prefix_within(&observation, head_budget);
    let tail = suffix_within(&observation, max_bytes - head_budget).max(head);
    let omitted = tail - head;
    let as_sent = if sent == total {
        String::new()
    } else {
        format!(" ({sent} in the request)")
    };
    let mut out = String::with_capacity(head + (total - tail) + 128);
    out.push_str(&observation[..head]);
    out.push_str(&format!(
        "\n[... {omitted} bytes omitted: the observation was {total} bytes{as_sent}, over the cap of {max_bytes} ...]\n"
    ));
    out.push_str(&observation[tail..]);
    out
}

/// The bytes `c` takes in a JSON string.
fn sent_char(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if c < ' ' => 6,
        c => c.len_utf8(),
    }
}

/// The bytes `text` takes in a JSON string.
fn sent_len(text: &str) -> usize {
    text.chars().map(sent_char).sum()
}

/// The longest prefix of `text` (its end, a byte index) that takes at most `budget` bytes sent.
fn prefix_within(text: &str, budget: usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += sent_char(c);
        if used > budget {
            return at;
        }
    }
    text.len()
}

/// The start (a byte index) of the longest suffix of `text` that takes at most `budget` bytes
/// sent.
fn suffix_within(text: &str, budget: usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices().rev() {
        used += sent_char(c);
        if used > budget {
            return at + c.len_utf8();
        }
    }
    0
}

/// Binary output — more than 1 KiB, over a tenth of it control characters (tabs and line ends
/// aside) or replacement characters — as a summary: the text before it (at most 512 bytes), its
/// size and its first bytes in hex. Anything else as it is.
fn summarize_binary(observation: String) -> String {
    if observation.len() <= 1024 {
        return observation;
    }
    let binary = |c: char| (c < ' ' && !matches!(c, '\n' | '\r' | '\t')) || c == '\u{fffd}';
    let (odd, chars) = observation.chars().fold((0, 0), |(odd, chars), c| {
        (odd + usize::from(binary(c)), chars + 1)
    });
    if odd * 10 <= chars {
        return observation;
    }
    let first = observation.find(binary).unwrap_or(0);
    let mut lead = first.min(512);
    while !observation.is_char_boundary(lead) {
        lead -= 1;
    }
    let rest = &observation.as_bytes()[lead..];
    let hex: Vec<String> = rest.iter().take(32).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}[binary output: {} bytes, {odd} of them control or undecodable characters; the \
         first {} as hex: {}]",
        &observation[..lead],
        rest.len(),
        hex.len(),
        hex.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_what_is_sent_and_binary_output_is_summarised() {
        // 2 MB of NUL bytes: a summary, not 12 MB of `\u0000`.
        let nul = format!("Observed output:\n{}", "\0".repeat(2 << 20));
        let capped = cap_observation_bytes(nul, 128 * 1024);
        assert!(capped.len() < 512, "{capped}");
        assert!(
            capped.starts_with("Observed output:\n[binary output: 2097152 bytes"),
            "{capped}"
        );
        assert!(capped.ends_with("00 00 00]"), "{capped}");
        // Text with some escapes is measured as sent: the result fits the cap once escaped.
        let quoted = "\"a\" ".repeat(100_000);
        let capped = cap_observation_bytes(quoted.clone(), 10_000);
        assert!(sent_len(&capped) <= 10_000 + 200, "{}", sent_len(&capped));
        assert!(
            capped.contains("(600000 in the request)"),
            "{}",
            &capped[4990..5200]
        );
        // Plain text under the cap is untouched, and a little binary in text too.
        let text = format!("ok{}", "\u{1}".repeat(10)) + &"x".repeat(2000);
        assert_eq!(cap_observation_bytes(text.clone(), 1 << 20), text);
    }

    #[test]
    fn from_settings_reads_every_policy_of_the_agent_section() {
        let mut section = AgentSettings::default();
        assert_eq!(Policies::from_settings(&section), Policies::default());
        section.next_step_prompt = NextStepPromptMode::AppendToMemory;
        section.observation_truncation = ObservationTruncation::Cut;
        section.auto_text_reply = AutoTextReply::KeepLooping;
        section.request_trimming = RequestTrimming::OPENMANUS;
        assert_eq!(Policies::from_settings(&section), Policies::openmanus());
        section.auto_text_reply = AutoTextReply::Finish;
        assert_eq!(
            Policies::from_settings(&section).auto_text_reply,
            AutoTextReply::Finish
        );
    }

    #[test]
    fn the_agent_section_of_a_file_becomes_the_policies() -> Result<(), agent_config::ConfigError> {
        let config = agent_config::Config::from_toml_str(
            "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[agent]\n\
             next_step_prompt = \"append\"\nobservation_truncation = \"cut\"\n\
             auto_text_reply = \"finish\"\n",
        )?;
        assert_eq!(
            Policies::from_settings(&config.agent),
            Policies {
                next_step_prompt: NextStepPromptMode::AppendToMemory,
                observation_truncation: ObservationTruncation::Cut,
                auto_text_reply: AutoTextReply::Finish,
                max_observation_bytes: DEFAULT_MAX_OBSERVATION_BYTES,
                request_trimming: RequestTrimming::LEAN,
            }
        );
        Ok(())
    }

    #[test]
    fn the_byte_cap_keeps_head_and_tail_on_character_boundaries() {
        assert_eq!(cap_observation_bytes("short".into(), 10), "short");
        assert_eq!(cap_observation_bytes("x".repeat(50), 0).len(), 50);
        // Two-byte characters: the split points move to boundaries, never inside one.
        let text = "é".repeat(100);
        let capped = cap_observation_bytes(text.clone(), 51);
        let (head, rest) = capped.split_once("\n[... ").unwrap();
        let (note, tail) = rest.split_once(" ...]\n").unwrap();
        assert!(head.len() + tail.len() <= 51);
        assert_eq!(head, "é".repeat(13));
        assert_eq!(tail, "é".repeat(12));
        assert_eq!(
            note,
            "150 bytes omitted: the observation was 200 bytes, over the cap of 51"
        );
    }

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
