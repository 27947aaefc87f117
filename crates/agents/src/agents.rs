//! Manus and SWEAgent: each a tool set, two prompts and a few limits over ToolCallAgent.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_browser::{BrowserConfig, BrowserContextHelper, BrowserUseTool};
use agent_llm::ChatModel;
use agent_sandbox::{Sandbox, SandboxFileOperator};
use agent_toolcall::{Policies, ToolCallAgent, ToolCallHooks};
use agent_tools::{
    AskHuman, Bash, HumanInput, PythonExecute, StrReplaceEditor, TerminalInput, Terminate,
    ToolCollection,
};
use agent_web::WebSearch;

use crate::manus::{Manus, ManusHooks};
use crate::prompts::{
    MANUS_NEXT_STEP_PROMPT, MANUS_SYSTEM_PROMPT, SWE_SYSTEM_PROMPT, with_directory,
};

/// The agent names, as OpenManus spells them.
pub const MANUS: &str = "Manus";
/// SWEAgent's name.
pub const SWE: &str = "swe";

/// What every agent needs from its surroundings.
#[derive(Clone)]
pub struct AgentOptions {
    /// The workspace: file tools are confined to it, bash and python run in it. Should be an
    /// absolute, existing directory.
    pub workspace: PathBuf,
    /// Overrides the agent's step budget.
    pub max_steps: Option<u32>,
    /// Overrides the agent's observation limit.
    pub max_observe: Option<usize>,
    /// Behaviour policies (default: [`Policies::default`]).
    pub policies: Policies,
    /// Where `ask_human` questions go (default: the terminal).
    pub human: Option<Arc<dyn HumanInput>>,
    /// The Python interpreter for `python_execute` (default: `python3` from `PATH`).
    pub python: Option<PathBuf>,
    /// Time limit of one `python_execute` call (default 5 s).
    pub python_timeout: Option<Duration>,
    /// Time limit of one `bash` call (default 120 s).
    pub bash_timeout: Option<Duration>,
    /// Runs `bash`, `python_execute` and `str_replace_editor` in this sandbox (`[sandbox]
    /// use_sandbox = true`); `None` (the default) runs them on the host. Build it with
    /// [`LocalSandboxOptions::mirrored`](agent_sandbox::LocalSandboxOptions::mirrored) over
    /// `workspace`, so that paths are the same inside the sandbox and in the prompts.
    pub sandbox: Option<Arc<dyn Sandbox>>,
    /// How Manus's `browser_use` starts or reaches Chromium (`[browser]`); the browser is
    /// launched at the first browser action, not before.
    pub browser: BrowserConfig,
    /// The search `browser_use`'s `web_search` action runs (`[search]`); `None`: that action
    /// reports that no search is configured.
    pub web_search: Option<Arc<WebSearch>>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("workspace", &self.workspace)
            .field("max_steps", &self.max_steps)
            .field("max_observe", &self.max_observe)
            .field("policies", &self.policies)
            .field("sandbox", &self.sandbox.as_ref().map(|s| s.workspace()))
            .field("browser", &self.browser)
            .finish_non_exhaustive()
    }
}

impl AgentOptions {
    /// Options for `workspace` with every default.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            max_steps: None,
            max_observe: None,
            policies: Policies::default(),
            human: None,
            python: None,
            python_timeout: None,
            bash_timeout: None,
            sandbox: None,
            browser: BrowserConfig::default(),
            web_search: None,
        }
    }

    /// Runs the code and file tools in `sandbox` (see [`AgentOptions::sandbox`]).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// `str_replace_editor`, confined to the workspace, through the sandbox when there is one.
    fn editor(&self) -> StrReplaceEditor {
        let editor = StrReplaceEditor::new().with_workspace_root(&self.workspace);
        match &self.sandbox {
            Some(sandbox) => {
                editor.with_file_operator(Arc::new(SandboxFileOperator::new(Arc::clone(sandbox))))
            }
            None => editor,
        }
    }

    fn python(&self) -> PythonExecute {
        let mut python = PythonExecute::new().with_cwd(&self.workspace);
        if let Some(program) = &self.python {
            python = python.with_interpreter(program);
        }
        if let Some(timeout) = self.python_timeout {
            python = python.with_timeout(timeout);
        }
        if let Some(sandbox) = &self.sandbox {
            python = python.with_launcher(sandbox.launcher());
        }
        python
    }

    fn bash(&self) -> Bash {
        let mut bash = Bash::new().with_cwd(&self.workspace);
        if let Some(timeout) = self.bash_timeout {
            bash = bash.with_timeout(timeout);
        }
        if let Some(sandbox) = &self.sandbox {
            bash = bash.with_launcher(sandbox.launcher());
        }
        bash
    }

    fn ask_human(&self) -> AskHuman {
        match &self.human {
            Some(input) => AskHuman::with_input(SharedInput(input.clone())),
            None => AskHuman::with_input(TerminalInput),
        }
    }

    /// `browser_use` per [`AgentOptions::browser`], using `llm` for `extract_content`.
    fn browser(&self, llm: &Arc<dyn ChatModel>) -> Arc<BrowserUseTool> {
        let mut tool = BrowserUseTool::with_config(self.browser.clone()).with_llm(Arc::clone(llm));
        if let Some(search) = &self.web_search {
            tool = tool.with_web_search(Arc::clone(search));
        }
        Arc::new(tool)
    }

    /// Applies the step budget, observation limit and policies of these options to `agent`
    /// (for agents built outside this crate, such as the browser agent).
    #[must_use]
    pub fn apply<H: ToolCallHooks>(&self, mut agent: ToolCallAgent<H>) -> ToolCallAgent<H> {
        if let Some(max_steps) = self.max_steps {
            agent = agent.with_max_steps(max_steps);
        }
        if let Some(max_observe) = self.max_observe {
            agent = agent.with_max_observe(max_observe);
        }
        agent.with_policies(self.policies)
    }
}

/// An `Arc<dyn HumanInput>` as a `HumanInput`.
struct SharedInput(Arc<dyn HumanInput>);

#[async_trait::async_trait]
impl HumanInput for SharedInput {
    async fn ask(&self, inquire: &str) -> Result<Option<String>, agent_tools::ToolError> {
        self.0.ask(inquire).await
    }
}

/// Manus's own tools, in OpenManus's order: `python_execute`, `browser_use`,
/// `str_replace_editor`, `ask_human` and `terminate`; and the browser tool itself, for the
/// browser context.
fn manus_tools(
    options: &AgentOptions,
    llm: &Arc<dyn ChatModel>,
) -> (ToolCollection, Arc<BrowserUseTool>) {
    let browser = options.browser(llm);
    let mut tools = ToolCollection::new();
    tools.add_tool(options.python());
    tools.add_shared(browser.clone());
    tools.add_tool(options.editor());
    tools.add_tool(options.ask_human());
    tools.add_tool(Terminate);
    (tools, browser)
}

/// Manus with its own tools, the tools `hooks` already has from MCP servers, and the browser
/// context.
pub(crate) fn build_manus(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    mut hooks: ManusHooks,
) -> Manus {
    let (mut tools, browser) = manus_tools(options, &llm);
    hooks.set_browser(BrowserContextHelper::new(browser));
    hooks.sync(&mut tools);
    let agent = ToolCallAgent::new(llm)
        .with_name(MANUS)
        .with_description(
            "A versatile agent that solves many kinds of tasks with tools: code, files, the \
             web, and questions to the user.",
        )
        .with_system_prompt(with_directory(MANUS_SYSTEM_PROMPT, &options.workspace))
        .with_next_step_prompt(MANUS_NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(20)
        .with_max_observe(10_000);
    options.apply(agent).with_hooks(hooks)
}

/// Manus, the general-purpose agent, without MCP servers: `python_execute`, `browser_use`,
/// `str_replace_editor`, `ask_human` and `terminate`, 20 steps, observations cut at 10,000
/// characters, the workspace in its system prompt. While one of its last three messages calls
/// `browser_use`, each step's prompt is the browser prompt with the current browser state.
/// [`manus_with_mcp`](crate::manus_with_mcp) and [`manus_lazy_mcp`](crate::manus_lazy_mcp) add
/// the tools of MCP servers.
pub fn manus(llm: Arc<dyn ChatModel>, options: &AgentOptions) -> Manus {
    build_manus(llm, options, ManusHooks::new())
}

/// SandboxManus's name.
pub const SANDBOX_MANUS: &str = "SandboxManus";

/// SandboxManus: Manus whose hands are inside `sandbox` — `sandbox_shell` (named shell
/// sessions), `sandbox_files`, `sandbox_browser` (the `browser_use` actions on a Chromium
/// started inside the sandbox; without `network_enabled` it reaches no network, only files
/// and the workspace; offered only by backends that can run a browser, the bubblewrap one),
/// `sandbox_vision`, `ask_human` and `terminate`. Manus's prompts with the sandbox's work dir,
/// 20 steps, observations cut at 10,000 characters; while one of its last three messages calls
/// `sandbox_browser`, the step's prompt carries the browser state.
pub fn sandbox_manus(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    sandbox: Arc<dyn Sandbox>,
) -> Manus {
    use agent_sandbox::tools::{SandboxFiles, SandboxShell, SandboxVision};
    let work_dir = sandbox.work_dir().to_path_buf();
    let browser = sandbox.browser_launcher().map(|launcher| {
        let mut config = BrowserConfig {
            launcher,
            downloads_dir: Some(work_dir.join("downloads")),
            downloads_host_dir: Some(sandbox.workspace().join("downloads")),
            // Never a browser outside the sandbox, and never the user's proxy.
            connect_url: None,
            proxy_server: None,
            proxy_credentials: None,
            ..options.browser.clone()
        };
        if !sandbox.network_enabled() {
            // The browser shares the host's network stack (its DevTools endpoint must be
            // reachable); a proxy that does not exist, used for every address, keeps its pages
            // off the network, and WebRTC may not send UDP around it.
            config.extra_args.extend([
                "--proxy-server=http://127.0.0.1:9".to_owned(),
                "--proxy-bypass-list=<-loopback>".to_owned(),
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
                "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
            ]);
        }
        Arc::new(
            BrowserUseTool::with_config(config)
                .with_name(SANDBOX_BROWSER)
                .with_llm(Arc::clone(&llm)),
        )
    });
    let mut tools = ToolCollection::new();
    tools.add_tool(SandboxShell::new(
        Arc::clone(&sandbox),
        work_dir.display().to_string(),
    ));
    tools.add_tool(SandboxFiles::new(Arc::clone(&sandbox)));
    if let Some(browser) = &browser {
        tools.add_shared(browser.clone());
    } else {
        tracing::warn!("this sandbox backend cannot run a browser; sandbox_browser is not offered");
    }
    tools.add_tool(SandboxVision::new(sandbox));
    tools.add_tool(options.ask_human());
    tools.add_tool(Terminate);
    let mut hooks = ManusHooks::new();
    if let Some(browser) = browser {
        hooks.set_browser(BrowserContextHelper::new(browser));
    }
    let agent = ToolCallAgent::new(llm)
        .with_name(SANDBOX_MANUS)
        .with_description(
            "A versatile agent whose commands, files and browser all live inside a sandbox.",
        )
        .with_system_prompt(with_directory(MANUS_SYSTEM_PROMPT, &work_dir))
        .with_next_step_prompt(MANUS_NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(20)
        .with_max_observe(10_000);
    options.apply(agent).with_hooks(hooks)
}

/// `sandbox_browser`: SandboxManus's browser tool's name.
pub const SANDBOX_BROWSER: &str = "sandbox_browser";

/// SWEAgent, the programmer: `bash`, `str_replace_editor` and `terminate`, 20 steps, no
/// next-step prompt.
pub fn swe(llm: Arc<dyn ChatModel>, options: &AgentOptions) -> ToolCallAgent {
    let mut tools = ToolCollection::new();
    tools.add_tool(options.bash());
    tools.add_tool(options.editor());
    tools.add_tool(Terminate);
    let agent = ToolCallAgent::new(llm)
        .with_name(SWE)
        .with_description("An autonomous programmer that works with a shell and a file editor.")
        .with_system_prompt(with_directory(SWE_SYSTEM_PROMPT, &options.workspace))
        .with_next_step_prompt("")
        .with_tools(tools)
        .with_max_steps(20);
    options.apply(agent)
}
