//! What the program writes besides the live view: lines on standard output and error, exit
//! codes, and a run's report.

use std::path::Path;

use agent_session::{Ending, RunReport};
use serde_json::json;

/// Exit code of a run that finished.
pub const EXIT_OK: u8 = 0;
/// Exit code of a run that failed, that the model declined (`refused`), or that could not start.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a run that used up its steps without finishing.
pub const EXIT_MAX_STEPS: u8 = 3;
/// Exit code of a run that reached a budget of `[agent]` (tokens, cost, time).
pub const EXIT_BUDGET: u8 = 4;
/// Exit code of `openmanus replay` when the replay differs from its recording.
pub const EXIT_DIVERGED: u8 = 5;
/// Exit code of a cancelled run (as a shell reports SIGINT).
pub const EXIT_CANCELLED: u8 = 130;

/// A line on standard error; a closed pipe is ignored.
pub fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A line on standard output; a closed pipe (`openmanus ... | head`) is ignored, not a panic.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// An error that ends the program.
pub fn report_error(error: &anyhow::Error) {
    note(&format!("error: {}", error_text(error)));
}

/// The error and its causes, `: `-separated (as `{:#}` shows them), without a cause whose text
/// the message before it already ends with: many library errors put their source in their own
/// text and also give it as their source, and the cause then printed twice.
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if text.is_empty() {
            text = cause;
        } else if !text.ends_with(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// The exit code of a run that ended so.
pub fn exit_code(report: &RunReport) -> u8 {
    ending_code(report.ending())
}

/// The exit code of a run that ended `ending` (here or on a worker).
pub fn ending_code(ending: Ending) -> u8 {
    match ending {
        Ending::Finished => EXIT_OK,
        Ending::MaxSteps => EXIT_MAX_STEPS,
        Ending::Cancelled => EXIT_CANCELLED,
        Ending::Failed | Ending::Refused => EXIT_FAILED,
        Ending::Budget => EXIT_BUDGET,
    }
}

/// How a run's report is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// An agent's run: the answer (else the step transcript), after the changed files.
    Agent,
    /// The planning flow: its full text (every step's output and the summary).
    Flow,
}

/// The line (on standard error) above the answer (on standard output).
fn answer_label(style: Style) -> String {
    let label = match style {
        Style::Agent => "■ answer",
        Style::Flow => "■ result",
    };
    crate::render::paint(
        crate::color::terminal().colour,
        anstyle::Style::new().bold(),
        label,
    )
}

/// Prints the report of a run: the failure, the files changed, the tokens and the answer (or,
/// with `--json`, one `result` line).
pub fn report(report: &RunReport, workspace: &Path, json: bool, quiet: bool, style: Style) {
    let shown = match style {
        Style::Agent => report.answer_or_text(),
        Style::Flow => &report.text,
    };
    if json {
        // `status` is a machine value (`finished`, `max_steps`, `cancelled`, `failed`,
        // `budget`, `refused`), the same for an agent and the flow; `status_text` is the words for it.
        say(&json!({"type": "result", "status": report.ending(),
                    "status_text": report.status_text(), "answer": report.answer,
                    "text": report.text, "changes": report.changes, "usage": report.usage.as_tally(),
                    "workspace": workspace})
        .to_string());
        return;
    }
    if let Some(outcome) = report.outcome() {
        match &outcome.status {
            agent_core::RunStatus::Failed(error) => {
                note(&format!("error: the run failed: {error}"));
            }
            agent_core::RunStatus::MaxSteps(n) => {
                note(&format!("Terminated: Reached max steps ({n})"));
            }
            agent_core::RunStatus::Finished(agent_core::FinishReason::Budget(exceeded)) => {
                note(&format!("Terminated: {exceeded}"));
            }
            agent_core::RunStatus::Finished(agent_core::FinishReason::Refused { message }) => {
                note(&format!("The model declined the task: {message}"));
            }
            _ => {}
        }
    }
    if !quiet {
        note("");
        let changes = &report.changes;
        if !changes.is_empty() {
            note(&format!("files in {}:", workspace.display()));
            for (mark, paths) in [
                ("+", &changes.created),
                ("~", &changes.modified),
                ("-", &changes.deleted),
            ] {
                for path in paths {
                    note(&format!("  {mark} {}", path.display()));
                }
            }
        }
        if changes.partial {
            note(&format!(
                "(the workspace holds more than {} files: only part of it was compared, and deletions are not listed)",
                agents::SNAPSHOT_LIMIT
            ));
        }
        if report.usage.total_tokens() > 0 {
            let usage = &report.usage;
            note(&format!(
                "tokens: {}",
                crate::render::usage_line(
                    usage.prompt_tokens,
                    usage.cached_prompt_tokens,
                    usage.completion_tokens,
                    usage.cost_usd
                )
            ));
        }
        // A run that failed has no answer: its error was said above.
        if report.answer.is_some() && !shown.trim().is_empty() {
            note(&answer_label(style));
        }
    }
    say(shown);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that shows its source in its own text and gives it as its source too.
    #[derive(Debug)]
    struct Wrapping {
        source: std::io::Error,
    }

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "the model settings are not usable: {}", self.source)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let inner = std::io::Error::other("invalid base_url \"\"");
        let error =
            anyhow::Error::new(Wrapping { source: inner }).context("cannot start the agent");
        assert_eq!(
            error_text(&error),
            "cannot start the agent: the model settings are not usable: invalid base_url \"\""
        );
        // A cause not in the message before it is shown, as `{:#}` does.
        let plain = anyhow::anyhow!("disk full").context("cannot write the journal");
        assert_eq!(error_text(&plain), format!("{plain:#}"));
    }
}
