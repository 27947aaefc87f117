//! The agent factory: every kind gets `[agent]`'s options the same way, the flow's executors
//! included; kinds parse from their names; what cannot be built says why.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_config::Config;
#[cfg(all(feature = "browser", feature = "charts"))]
use agent_core::Agent as _;
use agent_llm::{ChatModel, LlmError};
use agent_testkit::ScriptedModel;
use agents::{AgentFactory, AgentKind, FactoryError};

fn config(text: &str) -> Config {
    Config::from_toml_str(&format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"k\"\n{text}"
    ))
    .unwrap()
}

fn models() -> impl Fn(&str) -> Result<Arc<dyn ChatModel>, LlmError> + Send + Sync {
    |_: &str| Ok(Arc::new(ScriptedModel::new()) as Arc<dyn ChatModel>)
}

#[cfg(all(feature = "browser", feature = "charts"))]
#[tokio::test]
async fn agent_section_limits_apply_to_every_kind_it_builds_alone() {
    let dir = tempfile::tempdir().unwrap();
    let factory = AgentFactory::new(config("[agent]\nmax_steps = 7\n")).with_workspace(dir.path());
    for kind in [
        AgentKind::Manus,
        AgentKind::Swe,
        AgentKind::Browser,
        AgentKind::DataAnalysis,
    ] {
        let mut built = factory.build(kind, &models()).await.unwrap();
        assert_eq!(built.agent().base().max_steps, 7, "{kind}");
        assert_eq!(built.agent().base().name, kind.agent_name());
        built.shutdown().await;
    }
    // Without the override each agent keeps its own budget (DataAnalysis: 20).
    let plain = AgentFactory::new(config("")).with_workspace(dir.path());
    let built = plain
        .build(AgentKind::DataAnalysis, &models())
        .await
        .unwrap();
    assert_eq!(built.agent().base().max_steps, 20);
}

#[cfg(feature = "charts")]
#[tokio::test]
async fn agent_section_limits_apply_to_the_flows_data_analysis_executor() {
    let dir = tempfile::tempdir().unwrap();
    let factory = AgentFactory::new(config(
        "[agent]\nmax_steps = 4\n[runflow]\nuse_data_analysis_agent = true\n",
    ))
    .with_workspace(dir.path());
    let mut built = factory.build_flow(&models()).await.unwrap();
    let flow = built.flow();
    assert_eq!(flow.agent_keys(), ["manus", "swe", "data_analysis"]);
    for key in ["manus", "swe", "data_analysis"] {
        assert_eq!(flow.agent(key).unwrap().base().max_steps, 4, "{key}");
    }
    built.shutdown().await;
}

#[cfg(feature = "charts")]
#[tokio::test]
async fn the_planner_and_each_executor_ask_for_their_own_model() {
    let dir = tempfile::tempdir().unwrap();
    let factory = AgentFactory::new(config("[runflow]\nuse_data_analysis_agent = true\n"))
        .with_workspace(dir.path());
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = asked.clone();
    let models = move |name: &str| {
        record.lock().unwrap().push(name.to_owned());
        Ok(Arc::new(ScriptedModel::new()) as Arc<dyn ChatModel>)
    };
    let mut built = factory.build_flow(&models).await.unwrap();
    built.shutdown().await;
    assert_eq!(
        *asked.lock().unwrap(),
        ["Manus", "swe", "planning", "Data_Analysis"]
    );
}

#[tokio::test]
async fn the_mcp_agent_without_a_server_and_a_bad_model_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let factory = AgentFactory::new(config("")).with_workspace(dir.path());
    let error = factory.build(AgentKind::Mcp, &models()).await.unwrap_err();
    assert!(matches!(error, FactoryError::NoMcpServer), "{error}");

    let refuse = |_: &str| -> Result<Arc<dyn ChatModel>, LlmError> {
        Err(LlmError::InvalidRequest("no key".into()))
    };
    let error = factory.build(AgentKind::Swe, &refuse).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the model settings for `swe` are not usable: invalid request: no key"
    );
}

#[test]
fn kinds_parse_from_their_short_and_agent_names() {
    for kind in AgentKind::ALL {
        assert_eq!(kind.as_str().parse::<AgentKind>().unwrap(), kind);
        assert_eq!(kind.agent_name().parse::<AgentKind>().unwrap(), kind);
        assert_eq!(kind.to_string(), kind.as_str());
    }
    assert_eq!(
        "data-analysis".parse::<AgentKind>().unwrap(),
        AgentKind::DataAnalysis
    );
    let error = "painter".parse::<AgentKind>().unwrap_err();
    assert!(error.to_string().contains("unknown agent kind `painter`"));
    assert_eq!(
        serde_json::to_string(&AgentKind::DataAnalysis).unwrap(),
        "\"data_analysis\""
    );
}

/// Without the `browser` and `charts` features, BrowserAgent, DataAnalysis and a flow with
/// DataAnalysis are refused with an error naming the feature; Manus is built without
/// `browser_use`, with a warning when `[browser]` asks for something.
#[cfg(not(any(feature = "browser", feature = "charts")))]
#[tokio::test]
async fn a_lean_build_refuses_what_it_lacks_by_the_features_name() {
    let dir = tempfile::tempdir().unwrap();
    let factory = AgentFactory::new(config(
        "[browser]
headless = true
[runflow]
use_data_analysis_agent = true
",
    ))
    .with_workspace(dir.path());
    for (kind, feature) in [
        (AgentKind::Browser, "browser"),
        (AgentKind::DataAnalysis, "charts"),
    ] {
        let error = factory.build(kind, &models()).await.unwrap_err();
        assert!(
            matches!(error, FactoryError::FeatureDisabled { feature: f, .. } if f == feature),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .contains(&format!("`{feature}` cargo feature")),
            "{error}"
        );
    }
    let error = factory.build_flow(&models()).await.unwrap_err();
    assert!(
        error.to_string().contains("`charts` cargo feature"),
        "{error}"
    );

    let mut manus = factory.build(AgentKind::Manus, &models()).await.unwrap();
    assert!(
        manus
            .warnings()
            .iter()
            .any(|w| w.contains("`browser` cargo feature")),
        "{:?}",
        manus.warnings()
    );
    manus.shutdown().await;
    // Without a [browser] section, no warning.
    let plain = AgentFactory::new(config("")).with_workspace(dir.path());
    let mut manus = plain.build(AgentKind::Manus, &models()).await.unwrap();
    assert!(manus.warnings().is_empty(), "{:?}", manus.warnings());
    manus.shutdown().await;
}

/// OpenManus's step budget of each kind (spec §2.10), written out rather than read from the
/// constants, so that a changed default fails here.
#[cfg(all(feature = "browser", feature = "charts"))]
const SPEC_MAX_STEPS: [(AgentKind, u32); 6] = [
    (AgentKind::Manus, 20),
    (AgentKind::Swe, 20),
    (AgentKind::Browser, 20),
    (AgentKind::Sandbox, 20),
    (AgentKind::Mcp, 20),
    (AgentKind::DataAnalysis, 20),
];

#[cfg(all(feature = "browser", feature = "charts"))]
fn spec_max_steps(kind: AgentKind) -> u32 {
    SPEC_MAX_STEPS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, steps)| *steps)
        .unwrap()
}

#[cfg(all(feature = "browser", feature = "charts"))]
#[test]
fn each_kind_declares_the_specs_step_budget_and_the_generic_layers_theirs() {
    assert_eq!(SPEC_MAX_STEPS.map(|(kind, _)| kind), AgentKind::ALL);
    for (kind, steps) in SPEC_MAX_STEPS {
        assert_eq!(kind.default_max_steps(), Some(steps), "{kind}");
    }
    // The generic fallbacks, for agents built in code that set no budget: BaseAgent 10,
    // ToolCallAgent 30.
    assert_eq!(agent_core::BaseAgent::new("base").max_steps, 10);
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new());
    assert_eq!(
        agent_toolcall::ToolCallAgent::new(model).base().max_steps,
        30
    );
}

#[cfg(all(feature = "browser", feature = "charts"))]
#[tokio::test]
async fn without_a_configured_budget_every_kind_runs_on_the_specs() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    // No [agent] section: each kind's own default.
    let factory = AgentFactory::new(config("")).with_workspace(&workspace);
    for kind in [
        AgentKind::Manus,
        AgentKind::Swe,
        AgentKind::Browser,
        AgentKind::DataAnalysis,
    ] {
        let mut built = factory.build(kind, &models()).await.unwrap();
        assert_eq!(
            built.agent().base().max_steps,
            spec_max_steps(kind),
            "{kind}"
        );
        built.shutdown().await;
    }
    // MCPAgent needs a server and SandboxManus a sandbox to come out of the factory; their
    // constructors set the budget.
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new());
    let mcp = agent_mcp::mcp_agent(model.clone(), agent_mcp::McpClients::default());
    assert_eq!(mcp.base().max_steps, spec_max_steps(AgentKind::Mcp));
    let sandbox = Arc::new(
        agent_sandbox::LocalSandbox::new(agent_sandbox::LocalSandboxOptions::new(&workspace))
            .await
            .expect("bubblewrap sandboxes run here (cargo xtask setup installs bubblewrap)"),
    );
    let options = factory.options(false).await.unwrap();
    let sandboxed = agents::sandbox_manus(model, &options, sandbox);
    assert_eq!(
        sandboxed.base().max_steps,
        spec_max_steps(AgentKind::Sandbox)
    );
}
