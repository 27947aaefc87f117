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

/// One named way of sending fewer bytes for the same information (`[agent] request_trimming`).
/// Each applies when the request is built, never to memory: the session store and the journal
/// keep every message as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrimPolicy {
    /// `"superseded_file_views"` — the output of an earlier view of a file (by
    /// `str_replace_editor`'s `view` or `sandbox_files`'s `read_file`) is replaced by a short
    /// note when a later call viewed the whole file again or wrote all of it (`create`,
    /// `create_file`, `full_file_rewrite`): the later output is the current one.
    SupersededFileViews,
    /// `"old_images"` — the image of an earlier tool image or browser screenshot is not resent
    /// once the same tool has returned a newer one (its caption stays, with a note). Images the
    /// user gave are always sent.
    OldImages,
    /// `"repeated_outputs"` — a long tool output (at least 1 KiB) identical to an earlier one
    /// still in the request is replaced by a note naming the earlier call. The earlier copy is
    /// the one kept, so what was already sent never changes (prompt caches stay warm).
    RepeatedOutputs,
}

impl TrimPolicy {
    /// Every policy, in the order they are applied.
    pub const ALL: [Self; 3] = [
        Self::SupersededFileViews,
        Self::OldImages,
        Self::RepeatedOutputs,
    ];

    /// The name in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SupersededFileViews => "superseded_file_views",
            Self::OldImages => "old_images",
            Self::RepeatedOutputs => "repeated_outputs",
        }
    }
}

/// Which [`TrimPolicy`]s shape the requests (`[agent] request_trimming`): `"lean"` (all of them,
/// the default), `"openmanus"` (none: every request carries memory as it is, byte for byte what
/// OpenManus mode sent before these policies existed), or a list of policy names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTrimming {
    superseded_file_views: bool,
    old_images: bool,
    repeated_outputs: bool,
}

impl Default for RequestTrimming {
    fn default() -> Self {
        Self::LEAN
    }
}

impl RequestTrimming {
    /// `"openmanus"`: no policy.
    pub const OPENMANUS: Self = Self {
        superseded_file_views: false,
        old_images: false,
        repeated_outputs: false,
    };

    /// `"lean"`: every policy. The default.
    pub const LEAN: Self = Self {
        superseded_file_views: true,
        old_images: true,
        repeated_outputs: true,
    };

    /// Exactly `policies`.
    #[must_use]
    pub fn of(policies: impl IntoIterator<Item = TrimPolicy>) -> Self {
        policies.into_iter().fold(Self::OPENMANUS, Self::with)
    }

    /// The same set with `policy` added.
    #[must_use]
    pub fn with(mut self, policy: TrimPolicy) -> Self {
        *self.flag(policy) = true;
        self
    }

    /// The same set without `policy`.
    #[must_use]
    pub fn without(mut self, policy: TrimPolicy) -> Self {
        *self.flag(policy) = false;
        self
    }

    fn flag(&mut self, policy: TrimPolicy) -> &mut bool {
        match policy {
            TrimPolicy::SupersededFileViews => &mut self.superseded_file_views,
            TrimPolicy::OldImages => &mut self.old_images,
            TrimPolicy::RepeatedOutputs => &mut self.repeated_outputs,
        }
    }

    /// Whether `policy` is on.
    #[must_use]
    pub fn contains(self, policy: TrimPolicy) -> bool {
        match policy {
            TrimPolicy::SupersededFileViews => self.superseded_file_views,
            TrimPolicy::OldImages => self.old_images,
            TrimPolicy::RepeatedOutputs => self.repeated_outputs,
        }
    }

    /// Whether no policy is on (requests carry memory as it is).
    #[must_use]
    pub fn is_off(self) -> bool {
        self == Self::OPENMANUS
    }

    /// The policies that are on.
    pub fn policies(self) -> impl Iterator<Item = TrimPolicy> {
        TrimPolicy::ALL
            .into_iter()
            .filter(move |p| self.contains(*p))
    }
}

impl<'de> Deserialize<'de> for RequestTrimming {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RequestTrimming;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "\"lean\", \"openmanus\", or a list of \"superseded_file_views\", \
                     \"old_images\", \"repeated_outputs\"",
                )
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
                match value {
                    "lean" => Ok(RequestTrimming::LEAN),
                    "openmanus" => Ok(RequestTrimming::OPENMANUS),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut set = RequestTrimming::OPENMANUS;
                while let Some(policy) = seq.next_element::<TrimPolicy>()? {
                    set = set.with(policy);
                }
                Ok(set)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
