//! The human of a replay: `ask_human` answered with what the human answered when recorded.

use std::collections::VecDeque;
use std::sync::Mutex;

use agent_tools::{HumanInput, ToolError};
use async_trait::async_trait;

use super::recording::Recording;

/// The tool whose questions it answers.
const ASK_HUMAN: &str = "ask_human";

/// Answers each `ask_human` question with the recording's next answer, read from the recorded
/// observation (`Observed output of cmd `ask_human` executed:\n{answer}`); `None` (nobody can
/// answer) when the recording has no answer left or the recorded call failed. It never waits
/// for a terminal.
#[derive(Debug)]
pub(crate) struct RecordedAnswers {
    answers: Mutex<VecDeque<Option<String>>>,
}

impl RecordedAnswers {
    pub(crate) fn new(recording: &Recording) -> Self {
        let prefix = format!("Observed output of cmd `{ASK_HUMAN}` executed:\n");
        let answers = recording
            .runs()
            .iter()
            .flat_map(|run| &run.steps)
            .flat_map(|step| &step.calls)
            .filter(|call| call.name == ASK_HUMAN && call.arguments.is_some())
            .map(|call| {
                call.observation
                    .as_deref()
                    .and_then(|o| o.strip_prefix(prefix.as_str()))
                    .map(str::to_owned)
            })
            .collect();
        Self {
            answers: Mutex::new(answers),
        }
    }
}

#[async_trait]
impl HumanInput for RecordedAnswers {
    async fn ask(&self, _inquire: &str) -> Result<Option<String>, ToolError> {
        Ok(self
            .answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_come_from_the_recorded_observations_in_order() {
        let text = concat!(
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"model_response","seq":0,"response":{"content":"?"}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"step_started","step":1,"max_steps":5}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_started","step":1,"call":{"id":"a","type":"function","function":{"name":"ask_human","arguments":"{}"}}}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_finished","step":1,"call_id":"a","name":"ask_human","observation":"Observed output of cmd `ask_human` executed:\nblue","success":true}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_started","step":1,"call":{"id":"b","type":"function","function":{"name":"ask_human","arguments":"{}"}}}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_finished","step":1,"call_id":"b","name":"ask_human","observation":"Error: cancelled","success":false}}"#,
            "\n",
        );
        let recording = Recording::from_reader(text.as_bytes()).unwrap();
        let human = RecordedAnswers::new(&recording);
        assert_eq!(human.ask("colour?").await.unwrap().as_deref(), Some("blue"));
        assert_eq!(human.ask("again?").await.unwrap(), None);
        assert_eq!(human.ask("more?").await.unwrap(), None);
    }
}
