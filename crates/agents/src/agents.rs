//! SWEAgent and SandboxManus: each a tool set, two prompts and a few limits over ToolCallAgent
//! (Manus, with its MCP servers, is in [`manus`](crate::manus)).

use std::sync::Arc;

#[cfg(feature = "browser")]
use agent_browser::{BrowserConfig, BrowserContextHelper, BrowserUseTool};
use agent_desktop::ComputerUse;
use agent_llm::ChatModel;
use agent_sandbox::Sandbox;
use agent_toolcall::ToolCallAgent;
use agent_tools::{Terminate, ToolCollection};

use crate::manus::{Manus, ManusHooks};
use crate::options::AgentOptions;
use crate::prompts::{
    MANUS_NEXT_STEP_PROMPT, MANUS_SYSTEM_PROMPT, SANDBOX_MANUS, SWE, SWE_SYSTEM_PROMPT,
    with_directory,
};

/// SandboxManus's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The
/// one place it is declared: [`sandbox_manus`] and the agent factory read it.
pub const SANDBOX_MANUS_MAX_STEPS: u32 = 20;

/// SWEAgent's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The one
/// place it is declared: [`swe`] and the agent factory read it.
pub const SWE_MAX_STEPS: u32 = 20;

/// SandboxManus: Manus whose hands are inside `sandbox` — `sandbox_shell` (named shell
/// sessions), `sandbox_files`, `sandbox_browser` (with the `browser` feature: the `browser_use` actions on a Chromium
/// started inside the sandbox; without `network_enabled` it reaches no network, only files
/// and the workspace; offered only by backends that can run a browser, the bubblewrap one),
/// `sandbox_vision`, `computer_use` (the mouse, keyboard and screen of the sandbox's virtual
/// display; offered when the sandbox has one, see `LocalSandboxOptions::with_display` — the
/// agent factory builds SandboxManus's sandbox with it), `ask_human` and `terminate`. Manus's
/// prompts with the sandbox's work dir, [`SANDBOX_MANUS_MAX_STEPS`] steps, observations cut at
/// 10,000 characters; while one of its last three messages calls `sandbox_browser`, the step's
/// prompt carries the browser state.
pub fn sandbox_manus(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    sandbox: Arc<dyn Sandbox>,
) -> Manus {
    use agent_sandbox::tools::{SandboxFiles, SandboxShell, SandboxVision};
    let work_dir = sandbox.work_dir().to_path_buf();
    #[cfg(feature = "browser")]
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
    #[cfg(not(feature = "browser"))]
    if sandbox.browser_launcher().is_some() {
        tracing::warn!(
            "sandbox_browser is not offered: this build was made without the `browser` cargo feature"
        );
    }
    let mut tools = ToolCollection::new();
    tools.add_tool(SandboxShell::new(
        Arc::clone(&sandbox),
        work_dir.display().to_string(),
    ));
    tools.add_tool(SandboxFiles::new(Arc::clone(&sandbox)));
    #[cfg(feature = "browser")]
    if let Some(browser) = &browser {
        tools.add_shared(browser.clone());
    } else {
        tracing::warn!("this sandbox backend cannot run a browser; sandbox_browser is not offered");
    }
    tools.add_tool(SandboxVision::new(Arc::clone(&sandbox)));
    if let Some(computer) = ComputerUse::for_sandbox(sandbox) {
        tools.add_tool(computer);
    }
    tools.add_tool(options.ask_human());
    tools.add_tool(Terminate);
    #[cfg_attr(not(feature = "browser"), allow(unused_mut))]
    let mut hooks = ManusHooks::new();
    #[cfg(feature = "browser")]
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
        .with_max_steps(SANDBOX_MANUS_MAX_STEPS)
        .with_max_observe(10_000);
    options.apply(agent).with_hooks(hooks)
}

/// `sandbox_browser`: SandboxManus's browser tool's name.
pub const SANDBOX_BROWSER: &str = "sandbox_browser";

/// SWEAgent, the programmer: `bash`, `str_replace_editor` and `terminate`, [`SWE_MAX_STEPS`]
/// steps, no next-step prompt.
pub fn swe(llm: Arc<dyn ChatModel>, options: &AgentOptions) -> ToolCallAgent {
    let mut tools = ToolCollection::new();
    tools.add_shared(options.bash_tool());
    tools.add_tool(options.editor());
    tools.add_tool(Terminate);
    let agent = ToolCallAgent::new(llm)
        .with_name(SWE)
        .with_description("An autonomous programmer that works with a shell and a file editor.")
        .with_system_prompt(with_directory(SWE_SYSTEM_PROMPT, &options.workspace))
        .with_next_step_prompt("")
        .with_tools(tools)
        .with_max_steps(SWE_MAX_STEPS);
    options.apply(agent)
}
