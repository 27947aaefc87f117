//! The change-of-strategy hint ([`STUCK_PROMPT`]) reaches the model exactly once per request,
//! also when a hook replaces the step's prompt (issue 14 item 9: Manus and BrowserAgent used to
//! send it twice while browsing and stuck).

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, AgentError, STUCK_PROMPT};
use agent_testkit::ScriptedModel;
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};

const HOOK_PROMPT: &str = "The prompt a hook chose for this step.";

/// A hook that replaces every step's prompt, the way the browser hooks do. `pre_hinted` makes
/// it put the stuck hint in front itself, as Manus and BrowserAgent did before the fix.
struct PromptHook {
    pre_hinted: bool,
}

#[async_trait::async_trait]
impl ToolCallHooks for PromptHook {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        let prompt = if self.pre_hinted {
            core.base.with_stuck_hint(HOOK_PROMPT)
        } else {
            HOOK_PROMPT.to_owned()
        };
        Ok(BeforeThink::ProceedWithPrompt(prompt))
    }
}

/// Runs five steps of the same text reply (stuck from the fourth request on) and returns, per
/// request, how often the stuck hint occurs in its last message and whether that message ends
/// with the hook's prompt.
async fn hint_counts(pre_hinted: bool) -> Vec<(usize, bool)> {
    let model = Arc::new(ScriptedModel::new());
    for _ in 0..5 {
        model.push_text("I am not sure.");
    }
    let mut agent = ToolCallAgent::new(model.clone())
        .with_max_steps(5)
        .with_hooks(PromptHook { pre_hinted });
    agent.run(Some("task".into())).await.unwrap();
    model
        .requests()
        .iter()
        .map(|request| {
            let last = request.messages.last().unwrap().text();
            (
                last.matches(STUCK_PROMPT).count(),
                last.ends_with(HOOK_PROMPT),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_hook_prompt_gets_the_stuck_hint_from_think() {
    let counts = hint_counts(false).await;
    assert_eq!(
        counts,
        [(0, true), (0, true), (0, true), (1, true), (1, true)],
        "the hint is added once to a plain hook prompt while the agent is stuck"
    );
}

#[tokio::test]
async fn a_hook_prompt_that_already_carries_the_hint_is_not_hinted_twice() {
    let counts = hint_counts(true).await;
    assert_eq!(
        counts,
        [(0, true), (0, true), (0, true), (1, true), (1, true)],
        "a hook that adds the hint itself must not make it appear twice"
    );
}
