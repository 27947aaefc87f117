//! The example files load: the ones we ship in `config/`, and OpenManus-format ones written from
//! the spec's §6.4 (`tests/fixtures/openmanus/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use agent_config::{ApiType, ToolCallMode};
use agent_config::{ConfigLoader, ConfigOrigin, McpTransport};
use common::env_of;

fn repo_config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openmanus")
}

/// Every variable our examples read, set to recognisable values.
fn example_env() -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    env_of(&[
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-anthropic"),
        ("DEEPSEEK_API_KEY", "sk-deepseek"),
        ("AZURE_OPENAI_API_KEY", "az-key"),
        ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com"),
    ])
}

#[test]
fn every_shipped_example_loads() {
    let dir = repo_config_dir();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("config.example") && name.ends_with(".toml")) {
            continue;
        }
        let config = ConfigLoader::new(&dir)
            .with_env(example_env())
            .load_file(&path)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let llm = config.default_llm();
        // Bedrock may leave the endpoint to the AWS SDK (the region's).
        assert!(
            !llm.model.is_empty() && (!llm.base_url.is_empty() || llm.api_type == ApiType::Aws),
            "{name}"
        );
        seen.push(name);
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "config.example-anthropic.toml",
            "config.example-azure.toml",
            "config.example-bedrock.toml",
            "config.example-deepseek.toml",
            "config.example-ollama.toml",
            "config.example-openai.toml",
            "config.example.toml",
        ]
    );
}

#[test]
fn the_main_example_is_the_fallback_and_reads_the_key_from_the_environment() {
    // Lookup from the repository root finds config/config.example.toml when there is no
    // config.toml (config.toml is git-ignored; skip if a developer has one).
    let root = repo_config_dir().join("..");
    if root.join("config/config.toml").exists() {
        return;
    }
    let config = ConfigLoader::new(&root)
        .with_env(example_env())
        .load()
        .unwrap();
    assert_eq!(config.source().origin, ConfigOrigin::Example);
    let llm = config.default_llm();
    assert_eq!(llm.model, "gpt-4o");
    assert_eq!(llm.api_key.expose(), "sk-openai");
    assert_eq!(
        config.env_references().collect::<Vec<_>>(),
        [("llm.api_key", "OPENAI_API_KEY")]
    );
    assert_eq!(config.runflow.timeout_secs, 3600);
    assert!(config.daytona.is_none());

    // Without the variable the error says what to set.
    let err = ConfigLoader::new(&root)
        .with_env(env_of(&[]))
        .load()
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "`llm.api_key` reads the environment variable `OPENAI_API_KEY`, which is not set"
        ),
        "{err}"
    );
}

#[test]
fn provider_examples_say_what_they_promise() {
    let dir = repo_config_dir();
    let load = |name: &str| {
        ConfigLoader::new(&dir)
            .with_env(example_env())
            .load_file(name)
            .unwrap()
    };
    let azure = load("config.example-azure.toml");
    assert_eq!(azure.default_llm().api_type, ApiType::Azure);
    assert_eq!(azure.default_llm().base_url, "https://res.openai.azure.com");
    assert_eq!(
        azure.vision_llm().deployment.as_deref(),
        Some("gpt-4o-mini")
    );

    let ollama = load("config.example-ollama.toml");
    assert_eq!(ollama.default_llm().api_type, ApiType::Ollama);
    assert!(ollama.default_llm().api_key.is_empty());
    assert_eq!(ollama.vision_llm().model, "llama3.2-vision");
    assert_eq!(ollama.vision_llm().supports_images, Some(true));
    assert_eq!(ollama.default_llm().tool_call_mode, ToolCallMode::Auto);
    assert_eq!(
        ollama.vision_llm().tool_call_mode,
        ToolCallMode::Auto,
        "inherited"
    );

    let openai = load("config.example-openai.toml");
    assert_eq!(openai.llm_for("swe").model, "o3");
    assert_eq!(openai.vision_llm().model, "gpt-4o-mini");

    let deepseek = load("config.example-deepseek.toml");
    assert_eq!(deepseek.default_llm().supports_images, Some(false));
    assert_eq!(deepseek.default_llm().api_key.expose(), "sk-deepseek");

    let anthropic = load("config.example-anthropic.toml");
    assert_eq!(anthropic.default_llm().api_key.expose(), "sk-anthropic");
    assert_eq!(anthropic.default_llm().api_type, ApiType::Anthropic);
    assert_eq!(anthropic.default_llm().tool_call_mode, ToolCallMode::Native);

    let bedrock = load("config.example-bedrock.toml");
    assert_eq!(bedrock.default_llm().api_type, ApiType::Aws);
    assert!(bedrock.default_llm().base_url.is_empty());
}

#[test]
fn the_shipped_mcp_example_parses() {
    let servers =
        agent_config::load_mcp_servers(&repo_config_dir().join("mcp.example.json")).unwrap();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].id, "server1");
    assert_eq!(servers[0].transport.kind(), "sse");
    assert!(matches!(servers[1].transport, McpTransport::Stdio { .. }));
}

fn load_fixture(name: &str) -> agent_config::Config {
    ConfigLoader::new(fixtures())
        .with_env(env_of(&[]))
        .load_file(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn openmanus_main_example_loads_without_daytona() {
    let config = load_fixture("config.example.toml");
    let llm = config.default_llm();
    assert_eq!(llm.model, "claude-3-7-sonnet-20250219");
    assert_eq!(llm.base_url, "https://api.anthropic.com/v1/");
    assert_eq!(llm.api_key.expose(), "YOUR_API_KEY");
    assert_eq!(llm.max_tokens, 8192);
    assert_eq!(llm.temperature, 0.0);
    assert_eq!(llm.api_type, ApiType::Openai);
    assert_eq!(config.vision_llm().model, "claude-3-7-sonnet-20250219");
    assert_eq!(config.vision_llm().supports_images, Some(true));
    assert_eq!(config.mcp.server_reference, "app.mcp.server");
    assert!(!config.runflow.use_data_analysis_agent);
    // The crash of spec §6.1: no [daytona] must be fine.
    assert!(config.daytona.is_none());
}

#[test]
fn openmanus_daytona_example_loads() {
    let config = load_fixture("config.example-daytona.toml");
    let daytona = config.daytona.as_ref().unwrap();
    assert!(daytona.daytona_api_key.is_empty());
    assert_eq!(daytona.daytona_server_url, "https://app.daytona.io/api");
}

#[test]
fn openmanus_provider_examples_load() {
    let cases: [(&str, &str, ApiType, u32, &str); 6] = [
        (
            "config.example-model-anthropic.toml",
            "claude-3-7-sonnet-latest",
            ApiType::Openai,
            8192,
            "claude-3-7-sonnet-20250219",
        ),
        (
            "config.example-model-azure.toml",
            "gpt-4o-mini",
            ApiType::Azure,
            8096,
            "gpt-4o",
        ),
        (
            "config.example-model-google.toml",
            "gemini-2.0-flash",
            ApiType::Openai,
            8096,
            "gemini-2.0-flash-exp",
        ),
        (
            "config.example-model-ollama.toml",
            "llama3.2",
            ApiType::Ollama,
            4096,
            "llama3.2-vision",
        ),
        (
            "config.example-model-ppio.toml",
            "deepseek/deepseek-v3-0324",
            ApiType::Openai,
            16000,
            "qwen/qwen2.5-vl-72b-instruct",
        ),
        (
            "config.example-model-jiekouai.toml",
            "claude-sonnet-4-5-20250929",
            ApiType::Openai,
            64000,
            "claude-sonnet-4-5-20250929",
        ),
    ];
    for (file, model, api_type, max_tokens, vision) in cases {
        let config = load_fixture(file);
        let llm = config.default_llm();
        assert_eq!(
            (llm.model.as_str(), llm.api_type, llm.max_tokens),
            (model, api_type, max_tokens),
            "{file}"
        );
        assert_eq!(config.vision_llm().model, vision, "{file}");
    }
    let azure = load_fixture("config.example-model-azure.toml");
    assert_eq!(
        azure.default_llm().api_version.as_deref(),
        Some("AZURE API VERSION")
    );
    // [llm.vision] does not set api_type: it inherits azure, as in OpenManus.
    assert_eq!(azure.vision_llm().api_type, ApiType::Azure);
    assert_eq!(azure.vision_llm().max_tokens, 8192);
}

#[test]
fn openmanus_config_with_every_section_loads() {
    let config = load_fixture("config.all-sections.toml");
    let llm = config.default_llm();
    assert_eq!(
        llm.api_type,
        ApiType::Openai,
        "api_type = \"\" is OpenAI-compatible"
    );
    assert_eq!(llm.api_version.as_deref(), Some(""));
    assert_eq!(llm.max_input_tokens, Some(100_000));
    assert_eq!(config.browser.headless, Some(false));
    assert!(config.browser.disable_security);
    assert_eq!(config.browser.chrome_instance_path, None);
    assert_eq!(
        config.browser.cdp_url.as_deref(),
        Some("http://127.0.0.1:9222")
    );
    assert_eq!(config.browser.max_content_length, 5000);
    assert_eq!(
        config.browser.proxy.as_ref().unwrap().server,
        "http://proxy-server:3128"
    );
    assert_eq!(config.search.engine, "Baidu");
    assert_eq!(config.search.fallback_engines, ["DuckDuckGo", "Bing"]);
    assert_eq!(
        (config.search.lang.as_str(), config.search.country.as_str()),
        ("zh", "cn")
    );
    assert!(config.sandbox.use_sandbox);
    assert_eq!(config.sandbox.memory_limit, "1g");
    assert!(config.sandbox.network_enabled);
    let daytona = config.daytona.as_ref().unwrap();
    assert_eq!(daytona.daytona_target, "eu");
    assert_eq!(daytona.vnc_password.as_deref(), Some("vnc-secret"));
    assert!(config.runflow.use_data_analysis_agent);
}

#[test]
fn openmanus_mcp_example_parses() {
    let servers = agent_config::load_mcp_servers(&fixtures().join("mcp.example.json")).unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].id, "server1");
    assert_eq!(
        servers[0].transport,
        McpTransport::Sse {
            url: "http://localhost:8000/sse".into(),
            headers: Default::default()
        }
    );
}

/// The fenced blocks of `docs/configuration.md` with this language tag.
fn doc_blocks(lang: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match current.as_mut() {
            None if line.trim() == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line.trim() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn the_reference_page_examples_parse() {
    let tomls = doc_blocks("toml");
    assert!(!tomls.is_empty());
    for block in tomls {
        let config = ConfigLoader::new("")
            .with_env(env_of(&[
                ("OPENAI_API_KEY", "sk"),
                // The [telemetry] example's Langfuse header.
                ("LANGFUSE_AUTHORIZATION", "Basic cGs6c2s="),
            ]))
            .parse_str(&block)
            .unwrap_or_else(|e| panic!("{e}\n{block}"));
        assert_eq!(config.default_llm().base_url, "https://api.openai.com/v1");
    }
    let jsons = doc_blocks("json");
    assert_eq!(jsons.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "config/config.toml", common::LLM);
    common::write(dir.path(), "config/mcp.json", &jsons[0]);
    let config = ConfigLoader::new(dir.path())
        .with_env(env_of(&[("MCP_AUTHORIZATION", "Bearer abc")]))
        .load()
        .unwrap();
    assert_eq!(
        config
            .mcp
            .servers
            .iter()
            .map(|s| s.transport.kind())
            .collect::<Vec<_>>(),
        ["sse", "stdio", "stdio", "streamable_http"]
    );
    match &config.mcp.server("remote").unwrap().transport {
        McpTransport::StreamableHttp { headers, .. } => {
            assert_eq!(headers["Authorization"], "Bearer abc");
        }
        other => panic!("{other:?}"),
    }
}
