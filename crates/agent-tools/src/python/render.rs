//! The text the model reads for an [`Execution`]; the layouts are listed on
//! [`Execution::to_tool_result`].

use std::time::Duration;

use super::interpreter::{Execution, Outcome};
use crate::ToolResult;

/// The output of a successful call that printed nothing.
pub const NO_OUTPUT: &str =
    "Code ran successfully with no printed output; use print() to see values.";

/// What is lost whenever the interpreter is replaced.
const STATE_GONE: &str = "variables and imports from earlier calls are gone";

impl Execution {
    /// The headline of the result: the first line, which says how the call ended (`None` for a
    /// call that completed).
    #[must_use]
    pub fn headline(&self) -> Option<String> {
        Some(match &self.outcome {
            Outcome::Completed => return None,
            Outcome::Raised { .. } => "Execution failed.".to_owned(),
            Outcome::Exited { argument } => format!(
                "Execution failed: the code called exit({}). The interpreter caught it and is still \
                 running: variables and imports are kept.",
                argument.as_deref().unwrap_or_default()
            ),
            Outcome::TimedOut { limit } => format!(
                "Execution timeout after {} seconds. The interpreter was restarted: {STATE_GONE}.",
                seconds(*limit)
            ),
            Outcome::Crashed { status } => format!(
                "Execution failed: the Python interpreter stopped during the call ({status}). \
                 The interpreter was restarted: {STATE_GONE}."
            ),
            Outcome::Cancelled => {
                format!("Execution cancelled. The interpreter was stopped: {STATE_GONE}.")
            }
        })
    }

    /// The result the model reads. Parts are joined with a newline and empty parts are left out;
    /// captured text loses its trailing newlines.
    ///
    /// * Completed: output `{stdout}`, then `[stderr]` and `{stderr}` if the code wrote to
    ///   stderr. With neither, [`NO_OUTPUT`].
    /// * Anything else: error (rendered by the agent as `Error: …`) `{headline}`, `{stdout}`,
    ///   `[stderr]` + `{stderr}`, then the traceback for an exception. Headlines:
    ///   * exception or syntax error: `Execution failed.`
    ///   * `exit`: `Execution failed: the code called exit({argument}). The interpreter caught it
    ///     and is still running: variables and imports are kept.`
    ///   * time limit: `Execution timeout after {seconds} seconds. The interpreter was
    ///     restarted: variables and imports from earlier calls are gone.`
    ///   * interpreter died: `Execution failed: the Python interpreter stopped during the call
    ///     ({status}). The interpreter was restarted: variables and imports from earlier calls are
    ///     gone.`
    ///   * cancelled: `Execution cancelled. The interpreter was stopped: variables and imports
    ///     from earlier calls are gone.`
    ///
    /// A stream cut at the output limit is followed by `[{n} more bytes of {stream} were dropped:
    /// the limit is {limit} bytes per call]`. A restart no earlier result reported ends the text
    /// with `[Note: {reason}, so a new interpreter was started: variables and imports from earlier
    /// calls are gone.]`.
    #[must_use]
    pub fn to_tool_result(&self) -> ToolResult {
        let mut parts: Vec<String> = Vec::new();
        if let Some(headline) = self.headline() {
            parts.push(headline);
        }
        let stdout = trim_newlines(&self.stdout);
        if !stdout.is_empty() {
            parts.push(stdout.to_owned());
        }
        if self.stdout_dropped > 0 {
            parts.push(self.dropped("stdout", self.stdout_dropped));
        }
        let stderr = trim_newlines(&self.stderr);
        if !stderr.is_empty() {
            parts.push(format!("[stderr]\n{stderr}"));
        }
        if self.stderr_dropped > 0 {
            parts.push(self.dropped("stderr", self.stderr_dropped));
        }
        if let Outcome::Raised { traceback } = &self.outcome {
            let traceback = trim_newlines(traceback);
            if !traceback.is_empty() {
                parts.push(traceback.to_owned());
            }
        }
        if parts.is_empty() {
            parts.push(NO_OUTPUT.to_owned());
        }
        for restart in &self.restarts {
            parts.push(format!(
                "[Note: {restart}, so a new interpreter was started: {STATE_GONE}.]"
            ));
        }
        let text = parts.join("\n");
        if self.outcome.is_success() {
            ToolResult::success(text)
        } else {
            ToolResult::failure(text)
        }
    }

    fn dropped(&self, stream: &str, bytes: u64) -> String {
        format!(
            "[{bytes} more bytes of {stream} were dropped: the limit is {} bytes per call]",
            self.output_limit
        )
    }
}

fn trim_newlines(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// `5`, `0.5`, `1.25`: whole milliseconds, without trailing zeros.
pub(super) fn seconds(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}", millis / 1000)
    } else {
        let text = format!("{}.{:03}", millis / 1000, millis % 1000);
        text.trim_end_matches('0').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::Restart;

    fn execution(outcome: Outcome) -> Execution {
        Execution {
            outcome,
            stdout: String::new(),
            stderr: String::new(),
            stdout_dropped: 0,
            stderr_dropped: 0,
            output_limit: 10,
            restarts: Vec::new(),
        }
    }

    #[test]
    fn seconds_are_printed_without_trailing_zeros() {
        assert_eq!(seconds(Duration::from_secs(5)), "5");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25");
        assert_eq!(seconds(Duration::from_millis(2001)), "2.001");
    }

    #[test]
    fn layouts() {
        let mut done = execution(Outcome::Completed);
        assert_eq!(done.to_tool_result(), ToolResult::success(NO_OUTPUT));
        done.stderr = "warn\n".into();
        assert_eq!(done.to_tool_result(), ToolResult::success("[stderr]\nwarn"));
        done.stdout = "a\nb\n".into();
        done.stdout_dropped = 3;
        done.restarts.push(Restart::Interrupted);
        assert_eq!(
            done.to_tool_result(),
            ToolResult::success(
                "a\nb\n[3 more bytes of stdout were dropped: the limit is 10 bytes per call]\n\
                 [stderr]\nwarn\n[Note: the previous call was interrupted before it finished, so a \
                 new interpreter was started: variables and imports from earlier calls are gone.]"
            )
        );

        let mut raised = execution(Outcome::Raised {
            traceback: "Traceback\nValueError: x\n".into(),
        });
        raised.stdout = "before\n".into();
        assert_eq!(
            raised.to_tool_result(),
            ToolResult::failure("Execution failed.\nbefore\nTraceback\nValueError: x")
        );

        let cancelled = execution(Outcome::Cancelled);
        assert_eq!(
            cancelled.to_tool_result(),
            ToolResult::failure(
                "Execution cancelled. The interpreter was stopped: variables and imports from \
                 earlier calls are gone."
            )
        );
        let crashed = execution(Outcome::Crashed {
            status: "killed by signal SIGSEGV".into(),
        });
        assert_eq!(
            crashed.to_tool_result(),
            ToolResult::failure(
                "Execution failed: the Python interpreter stopped during the call (killed by \
                 signal SIGSEGV). The interpreter was restarted: variables and imports from \
                 earlier calls are gone."
            )
        );
    }
}
