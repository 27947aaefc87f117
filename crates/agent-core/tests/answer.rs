//! `RunOutcome::answer`: the text that came with the call that finished the run, else the run's
//! last reply with text; never an earlier run's reply.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{Agent, AgentError, AgentEvent, BaseAgent, FinishReason, ToolCall};
use async_trait::async_trait;

/// Replays scripted replies: each step emits one Thought; a reply calling `terminate` finishes.
struct Replies {
    base: BaseAgent,
    script: Vec<(&'static str, Option<&'static str>)>,
}

#[async_trait]
impl Agent for Replies {
    fn base(&self) -> &BaseAgent {
        &self.base
    }

    fn base_mut(&mut self) -> &mut BaseAgent {
        &mut self.base
    }

    async fn step(&mut self) -> Result<String, AgentError> {
        let (content, call) = self.script.remove(0);
        let calls: Vec<ToolCall> = call
            .map(|name| ToolCall::new("c", name, "{}"))
            .into_iter()
            .collect();
        self.base.emit(AgentEvent::Thought {
            step: self.base.current_step(),
            content: content.to_owned(),
            tool_calls: calls.clone(),
        });
        if let Some(name) = call.filter(|n| *n == "terminate") {
            self.base.finish(FinishReason::SpecialTool {
                name: name.to_owned(),
            })?;
        }
        Ok(String::new())
    }
}

fn agent(script: Vec<(&'static str, Option<&'static str>)>) -> Replies {
    Replies {
        base: BaseAgent::new("replies").with_max_steps(5),
        script,
    }
}

#[tokio::test]
async fn the_answer_is_the_text_that_came_with_the_finishing_call() {
    let mut agent = agent(vec![
        ("Let me look.", Some("bash")),
        ("  The file has 3 lines.  ", Some("terminate")),
    ]);
    let outcome = agent.run(Some("Count".into())).await.unwrap();
    assert_eq!(outcome.answer(), Some("The file has 3 lines."));
}

#[tokio::test]
async fn a_finishing_call_without_text_gives_the_last_text_of_the_run() {
    let mut agent = agent(vec![
        ("It is 42.", Some("bash")),
        ("", Some("bash")),
        ("", Some("terminate")),
    ]);
    let outcome = agent.run(Some("Answer".into())).await.unwrap();
    assert_eq!(outcome.answer(), Some("It is 42."));
}

#[tokio::test]
async fn a_run_without_text_has_no_answer_even_after_a_run_with_one() {
    let mut agent = agent(vec![
        ("First answer.", Some("terminate")),
        ("", Some("bash")),
        ("", Some("terminate")),
    ]);
    let first = agent.run(Some("One".into())).await.unwrap();
    assert_eq!(first.answer(), Some("First answer."));
    agent.base_mut().reset_state().unwrap();
    let second = agent.run(Some("Two".into())).await.unwrap();
    assert!(second.is_finished());
    assert_eq!(second.answer(), None);
}

#[tokio::test]
async fn a_run_out_of_steps_answers_with_its_last_text() {
    let mut agent = agent(vec![("Still working.", Some("bash")), ("", Some("bash"))]);
    agent.base_mut().max_steps = 2;
    let outcome = agent.run(Some("Go".into())).await.unwrap();
    assert!(!outcome.is_finished());
    assert_eq!(outcome.answer(), Some("Still working."));
}
