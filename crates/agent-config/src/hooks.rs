//! `[[permissions.hooks]]`: the user's own commands, run before and after each tool call and
//! at the end of a run. The settings vocabulary only; `agents` runs them (its `permissions`
//! gate) and documents what a hook is given and how it answers.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The default time limit of one hook.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// `"before-tool"`: before a tool call runs; it may allow, deny, ask or change the
    /// arguments.
    BeforeTool,
    /// `"after-tool"`: after a tool call ran, given its result; it may add a note for the model.
    AfterTool,
    /// `"run-end"`: when a run ends, given how; told, never asked.
    RunEnd,
}

impl HookEvent {
    /// The spelling in the configuration and in what a hook is given.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::BeforeTool => "before-tool",
            Self::AfterTool => "after-tool",
            Self::RunEnd => "run-end",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One hook (`[[permissions.hooks]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawHook", into = "RawHook")]
pub struct HookSettings {
    /// When it runs.
    pub on: HookEvent,
    /// The program and its arguments (no shell: write `["sh", "-c", "..."]` for one).
    pub command: Vec<String>,
    /// Only for these tools (`bash`, `python_execute`, …); every tool when empty.
    pub tools: Vec<String>,
    /// How long it may take; past it, a `before-tool` hook denies the call.
    pub timeout: Duration,
}

impl HookSettings {
    /// Whether the hook is about `tool`.
    #[must_use]
    pub fn covers(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|wanted| wanted == tool)
    }
}

/// A hook as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    on: HookEvent,
    command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<String>,
    #[serde(default = "default_timeout_secs")]
    timeout_secs: f64,
}

fn default_timeout_secs() -> f64 {
    DEFAULT_HOOK_TIMEOUT.as_secs_f64()
}

impl TryFrom<RawHook> for HookSettings {
    type Error = String;

    fn try_from(raw: RawHook) -> Result<Self, Self::Error> {
        if raw.command.first().is_none_or(|program| program.is_empty()) {
            return Err(
                "a hook's `command` names its program first, e.g. [\"/path/to/hook\"]".into(),
            );
        }
        if !(raw.timeout_secs.is_finite() && raw.timeout_secs > 0.0 && raw.timeout_secs <= 3600.0) {
            return Err(format!(
                "a hook's `timeout_secs` is more than 0 and at most 3600, not {}",
                raw.timeout_secs
            ));
        }
        Ok(Self {
            on: raw.on,
            command: raw.command,
            tools: raw.tools,
            timeout: Duration::from_secs_f64(raw.timeout_secs),
        })
    }
}

impl From<HookSettings> for RawHook {
    fn from(hook: HookSettings) -> Self {
        Self {
            on: hook.on,
            command: hook.command,
            tools: hook.tools,
            timeout_secs: hook.timeout.as_secs_f64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Doc {
        hooks: Vec<HookSettings>,
    }

    #[test]
    fn a_hook_reads_with_its_defaults() {
        let doc: Doc = toml::from_str(
            "[[hooks]]\non = \"before-tool\"\ncommand = [\"/bin/check\", \"--strict\"]\n\
             tools = [\"bash\"]\n[[hooks]]\non = \"run-end\"\ncommand = [\"notify\"]\n\
             timeout_secs = 0.5\n",
        )
        .unwrap();
        assert_eq!(doc.hooks[0].on, HookEvent::BeforeTool);
        assert_eq!(doc.hooks[0].command, ["/bin/check", "--strict"]);
        assert_eq!(doc.hooks[0].timeout, DEFAULT_HOOK_TIMEOUT);
        assert!(doc.hooks[0].covers("bash") && !doc.hooks[0].covers("python_execute"));
        assert!(doc.hooks[1].covers("anything"));
        assert_eq!(doc.hooks[1].timeout, Duration::from_millis(500));
    }

    #[test]
    fn a_hook_without_a_program_or_with_a_bad_limit_is_refused() {
        for text in [
            "on = \"before-tool\"\ncommand = []",
            "on = \"before-tool\"\ncommand = [\"\"]",
            "on = \"before-tool\"\ncommand = [\"x\"]\ntimeout_secs = 0",
            "on = \"before-tool\"\ncommand = [\"x\"]\ntimeout_secs = -1",
            "on = \"sometimes\"\ncommand = [\"x\"]",
            "on = \"before-tool\"\ncommand = [\"x\"]\nshell = true",
        ] {
            let error = toml::from_str::<Doc>(&format!("[[hooks]]\n{text}\n")).unwrap_err();
            assert!(!error.to_string().is_empty(), "{text}");
        }
        let error =
            toml::from_str::<Doc>("[[hooks]]\non = \"before-tool\"\ncommand = []\n").unwrap_err();
        assert!(
            error.to_string().contains("names its program first"),
            "{error}"
        );
    }
}
