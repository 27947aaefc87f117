//! [`BrowserAgent`]: `browser_use` and `terminate` over ToolCallAgent, with the browser state
//! in every step's prompt (spec §2.5; W28 fixed: the prompts are written for function calling).

use std::sync::Arc;

use agent_core::AgentError;
use agent_llm::ChatModel;
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};
use agent_tools::{Terminate, ToolCollection};
use async_trait::async_trait;

use crate::{BrowserContextHelper, BrowserUseTool};

/// BrowserAgent's name, as OpenManus spells it.
pub const BROWSER_AGENT: &str = "browser";

/// BrowserAgent's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The
/// one place it is declared: [`browser_agent`] and the agent factory read it.
pub const BROWSER_AGENT_MAX_STEPS: u32 = 20;

/// BrowserAgent's system prompt.
pub const BROWSER_SYSTEM_PROMPT: &str = "You are a browser agent: you reach the user's goal by \
operating a real web browser through the `browser_use` tool, one or more calls per step.

Before each step you are shown the browser state: the URL and title of the current tab, the open \
tabs, how much of the page lies above and below the viewport, and the page's interactive \
elements, each as `[index]<tag attributes>text</tag>`. Refer to elements only by those \
indices; they are renumbered whenever the page changes, so always use the latest list. A \
screenshot of the page may come with the state.

Work like this:
- Open pages with `go_to_url` (or `web_search` to find one); use `open_tab` for a second page \
and `switch_tab` to go back to a tab.
- Fill forms with `input_text`, choose options with `get_dropdown_options` and \
`select_dropdown_option`, press keys with `send_keys`, and click with `click_element`.
- If what you need is not visible, scroll (`scroll_down`, `scroll_up`, `scroll_to_text`).
- To read information off a page, call `extract_content` with a precise goal.
- When an action fails, read the error, look at the new state and try another way; do not \
repeat the same failing call.
- Never invent page content: report only what you saw.

When the goal is reached, call `terminate` with status `success` and give the answer in your \
message; if it cannot be reached, call `terminate` with status `failure` and say why.";

/// BrowserAgent: a ToolCallAgent with [`BrowserHooks`].
pub type BrowserAgent = ToolCallAgent<BrowserHooks>;

/// BrowserAgent's hooks: every step's prompt is the browser next-step prompt filled with the
/// current state (`think()` puts the stuck hint in front while the agent is stuck).
#[derive(Debug, Clone)]
pub struct BrowserHooks {
    helper: BrowserContextHelper,
}

impl BrowserHooks {
    /// Hooks over `tool`.
    #[must_use]
    pub fn new(tool: Arc<BrowserUseTool>) -> Self {
        Self {
            helper: BrowserContextHelper::new(tool),
        }
    }

    /// The context helper.
    #[must_use]
    pub fn helper(&self) -> &BrowserContextHelper {
        &self.helper
    }
}

#[async_trait]
impl ToolCallHooks for BrowserHooks {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        let prompt = self.helper.format_next_step_prompt(core).await;
        // Plain: think() adds the stuck hint once while the agent is stuck.
        Ok(BeforeThink::ProceedWithPrompt(prompt))
    }
}

/// BrowserAgent over `llm`, driving `tool` (which gets `llm` for `extract_content` unless it
/// has a model already): `browser_use` and `terminate`, [`BROWSER_AGENT_MAX_STEPS`] steps,
/// observations cut at 10,000 characters. The browser closes at the end of every run.
#[must_use]
pub fn browser_agent(llm: Arc<dyn ChatModel>, tool: BrowserUseTool) -> BrowserAgent {
    let tool = Arc::new(if tool.has_llm() {
        tool
    } else {
        tool.with_llm(Arc::clone(&llm))
    });
    let mut tools = ToolCollection::new();
    tools.add_shared(tool.clone());
    tools.add_tool(Terminate);
    ToolCallAgent::new(llm)
        .with_name(BROWSER_AGENT)
        .with_description("A browser agent that reaches goals on the web by operating a browser.")
        .with_system_prompt(BROWSER_SYSTEM_PROMPT)
        .with_next_step_prompt(crate::BROWSER_NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(BROWSER_AGENT_MAX_STEPS)
        .with_max_observe(10_000)
        .with_hooks(BrowserHooks::new(tool))
}
