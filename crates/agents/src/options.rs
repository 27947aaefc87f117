//! [`AgentOptions`]: what every agent needs from its surroundings, and the tools built from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "browser")]
use agent_browser::{BrowserConfig, BrowserUseTool};
use agent_config::{ApprovalPolicy, HookSettings, PermissionRule, SandboxMode};
use agent_core::Budget;
#[cfg(feature = "browser")]
use agent_llm::ChatModel;
use agent_mcp::McpClientOptions;
use agent_sandbox::{Confinement, Sandbox, SandboxFileOperator};
use agent_toolcall::{Compaction, Policies, ToolCallAgent, ToolCallHooks, ToolGate};

use crate::permissions::escalation::Escalatable;
use crate::permissions::{GateOptions, HookGate, SandboxGate};
use agent_tools::{
    AskHuman, Bash, HumanInput, PythonExecute, StrReplaceEditor, TerminalInput, Tool,
};
use agent_web::WebSearch;

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
    /// Limits on every run (`[agent]`'s `max_run_tokens`, `max_run_cost`, `max_run_seconds`).
    pub budget: Budget,
    /// How requests are kept within the context window (`[agent]`'s `compaction` keys and the
    /// model of `summary_llm`).
    pub compaction: Compaction,
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
    /// Confines `bash`, `python_execute` and the DataAnalysis Python on the host (`[permissions]
    /// sandbox`, `--sandbox`; the factory builds it, `workspace-write` by default). Ignored when
    /// [`AgentOptions::sandbox`] is set (the sandbox confines them). `None`: they run with the
    /// user's full authority. Keep it alive as long as the tools (its private temporary
    /// directory is theirs).
    pub confinement: Option<Arc<Confinement>>,
    /// When a call the confinement refused is asked about (`[permissions] approval`); the
    /// question goes to [`AgentOptions::human`] (the terminal by default; nobody there means
    /// `never`). A refusal is asked about only with a confinement; `untrusted` asks before
    /// code in every mode.
    pub approval: ApprovalPolicy,
    /// Permission rules, first match wins: the project's deny rules
    /// (`<workspace>/.openmanus/rules.toml`), the configuration's, then the rules file's. They
    /// apply in every mode; an allow rule gives more only to a confined tool.
    pub rules: Vec<PermissionRule>,
    /// Where an "always" answer writes its rule (`None`: it lasts the session).
    pub rules_file: Option<PathBuf>,
    /// The user's hooks around every tool call and at the end of each run
    /// (`[[permissions.hooks]]`), whatever the sandbox.
    pub hooks: Vec<HookSettings>,
    /// How Manus's `browser_use` starts or reaches Chromium (`[browser]`); the browser is
    /// launched at the first browser action, not before. Only with the `browser` feature.
    #[cfg(feature = "browser")]
    pub browser: BrowserConfig,
    /// The search `browser_use`'s `web_search` action runs (`[search]`); `None`: that action
    /// reports that no search is configured.
    pub web_search: Option<Arc<WebSearch>>,
    /// Files the file tools refuse even inside the workspace: the configuration files, which
    /// hold the API keys (the factory fills it from the loaded configuration).
    pub secret_files: Vec<PathBuf>,
    /// How Manus connects its MCP servers: timeouts, reconnection, and how long its first step
    /// waits for servers still connecting (`[mcp]`).
    pub mcp: McpClientOptions,
    /// Where `str_replace_editor` reads and writes files when no sandbox holds them (`None`:
    /// this machine's file system).
    pub files: Option<Arc<dyn agent_tools::FileOperator>>,
    /// When set, the approval policy is what it says at each call, not `approval`.
    pub approval_switch: Option<crate::permissions::ApprovalSwitch>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("AgentOptions");
        debug
            .field("workspace", &self.workspace)
            .field("max_steps", &self.max_steps)
            .field("max_observe", &self.max_observe)
            .field("policies", &self.policies)
            .field("sandbox", &self.sandbox.as_ref().map(|s| s.workspace()))
            .field("confinement", &self.confinement);
        #[cfg(feature = "browser")]
        debug.field("browser", &self.browser);
        debug.finish_non_exhaustive()
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
            budget: Budget::default(),
            compaction: Compaction::default(),
            human: None,
            python: None,
            python_timeout: None,
            bash_timeout: None,
            sandbox: None,
            confinement: None,
            approval: ApprovalPolicy::default(),
            rules: Vec::new(),
            rules_file: None,
            hooks: Vec::new(),
            #[cfg(feature = "browser")]
            browser: BrowserConfig::default(),
            web_search: None,
            secret_files: Vec::new(),
            mcp: McpClientOptions::default(),
            files: None,
            approval_switch: None,
        }
    }

    /// Runs the code and file tools in `sandbox` (see [`AgentOptions::sandbox`]).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// `str_replace_editor`, confined to the workspace, through the sandbox when there is one;
    /// it writes nothing when the confinement is `read-only`.
    pub(crate) fn editor(&self) -> StrReplaceEditor {
        let mut editor = StrReplaceEditor::new()
            .with_workspace_root(&self.workspace)
            .with_denied_paths(self.secret_files.iter().cloned());
        let read_only = self
            .confinement
            .as_ref()
            .is_some_and(|confinement| confinement.mode() == SandboxMode::ReadOnly);
        if read_only && self.sandbox.is_none() {
            editor = editor.read_only();
        }
        match (&self.sandbox, &self.files) {
            (Some(sandbox), _) => {
                editor.with_file_operator(Arc::new(SandboxFileOperator::new(Arc::clone(sandbox))))
            }
            (None, Some(files)) => editor.with_file_operator(Arc::clone(files)),
            (None, None) => editor,
        }
    }

    /// `tool`, offering the model to ask for more in the call (`escalate`) when it is confined
    /// on the host and someone may be asked (the policy is not `never`).
    fn escalatable(&self, tool: impl Tool + 'static) -> Arc<dyn Tool> {
        let confined = self.confinement.is_some() && self.sandbox.is_none();
        // With a switch the policy may change: the call can always ask, the gate decides.
        if confined && (self.approval_switch.is_some() || self.approval != ApprovalPolicy::Never) {
            Arc::new(Escalatable::new(Arc::new(tool)))
        } else {
            Arc::new(tool)
        }
    }

    /// `python_execute` as the agents get it (with `escalate` when confined, see
    /// [`Escalatable`]).
    #[must_use]
    pub fn python_tool(&self) -> Arc<dyn Tool> {
        self.escalatable(self.python())
    }

    /// `bash` as the agents get it (with `escalate` when confined).
    #[must_use]
    pub fn bash_tool(&self) -> Arc<dyn Tool> {
        self.escalatable(self.bash())
    }

    pub(crate) fn python(&self) -> PythonExecute {
        let mut python = PythonExecute::new().with_cwd(&self.workspace);
        if let Some(program) = &self.python {
            python = python.with_interpreter(program);
        }
        if let Some(timeout) = self.python_timeout {
            python = python.with_timeout(timeout);
        }
        if let Some(launcher) = self.launcher() {
            python = python.with_launcher(launcher);
        }
        python
    }

    pub(crate) fn bash(&self) -> Bash {
        let mut bash = Bash::new().with_cwd(&self.workspace);
        if let Some(timeout) = self.bash_timeout {
            bash = bash.with_timeout(timeout);
        }
        if let Some(launcher) = self.launcher() {
            bash = bash.with_launcher(launcher);
        }
        bash
    }

    /// The launcher the code-running tools start under: the sandbox's, else the confinement's;
    /// `None` when they run unconfined.
    #[must_use]
    pub fn launcher(&self) -> Option<Vec<String>> {
        match (&self.sandbox, &self.confinement) {
            (Some(sandbox), _) => Some(sandbox.launcher()),
            (None, Some(confinement)) => Some(confinement.launcher()),
            (None, None) => None,
        }
    }

    /// The gate around tool calls: the hooks (every tool, whatever the sandbox), then the
    /// approval policy around `bash` and `python_execute` when they are confined (not in a
    /// sandbox, which has no "more" to give; their unconfined twins run what is allowed).
    /// `None` when there is neither.
    #[must_use]
    pub fn gate(&self) -> Option<Arc<dyn ToolGate>> {
        let human: Arc<dyn HumanInput> = match &self.human {
            Some(input) => Arc::clone(input),
            None => Arc::new(TerminalInput),
        };
        let sandbox = self.sandbox_gate(&human);
        if self.hooks.is_empty() {
            return sandbox.map(|gate| Arc::new(gate) as Arc<dyn ToolGate>);
        }
        Some(Arc::new(HookGate::new(
            self.hooks.clone(),
            self.workspace.clone(),
            human,
            sandbox,
        )))
    }

    /// The approval policy and the rules: around the confined tools with their unconfined
    /// twins; without a confinement (full access, or the tools in a sandbox), only when there
    /// are rules, the `untrusted` policy or a switch that may turn to it, and with no twins
    /// (rules deny, `untrusted` asks, nothing is given more).
    fn sandbox_gate(&self, human: &Arc<dyn HumanInput>) -> Option<SandboxGate> {
        let confinement = self.confinement.as_ref().filter(|_| self.sandbox.is_none());
        if confinement.is_none()
            && self.rules.is_empty()
            && self.approval != ApprovalPolicy::Untrusted
            && self.approval_switch.is_none()
        {
            return None;
        }
        let twins: Vec<Arc<dyn Tool>> = if confinement.is_some() {
            let mut python = PythonExecute::new().with_cwd(&self.workspace);
            if let Some(program) = &self.python {
                python = python.with_interpreter(program);
            }
            if let Some(timeout) = self.python_timeout {
                python = python.with_timeout(timeout);
            }
            let mut bash = Bash::new().with_cwd(&self.workspace);
            if let Some(timeout) = self.bash_timeout {
                bash = bash.with_timeout(timeout);
            }
            vec![Arc::new(bash), Arc::new(python)]
        } else {
            Vec::new()
        };
        Some(SandboxGate::new(GateOptions {
            mode: confinement.map_or(SandboxMode::FullAccess, |c| c.mode()),
            policy: self.approval,
            switch: self.approval_switch.clone(),
            network_off: confinement.is_some_and(|c| !c.network_allowed()),
            workspace: self.workspace.clone(),
            human: Arc::clone(human),
            rules: self.rules.clone(),
            rules_file: self.rules_file.clone(),
            twins,
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
        }))
    }

    pub(crate) fn ask_human(&self) -> AskHuman {
        match &self.human {
            Some(input) => AskHuman::with_input(SharedInput(input.clone())),
            None => AskHuman::with_input(TerminalInput),
        }
    }

    /// `browser_use` per [`AgentOptions::browser`], using `llm` for `extract_content`.
    #[cfg(feature = "browser")]
    pub(crate) fn browser(&self, llm: &Arc<dyn ChatModel>) -> Arc<BrowserUseTool> {
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
        if let Some(gate) = self.gate() {
            agent = agent.with_gate(gate);
        }
        agent
            .with_policies(self.policies)
            .with_budget(self.budget)
            .with_compaction(self.compaction.clone())
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
