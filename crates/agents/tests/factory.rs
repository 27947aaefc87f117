//! The agent factory: every kind gets `[agent]`'s options the same way, the flow's executors
//! included; kinds parse from their names; what cannot be built says why.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_config::Config;
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
