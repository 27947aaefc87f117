//! `[llm]` and `[llm.<name>]`: merging, lookup by agent name, `[llm.vision]`, `${VAR}` keys and
//! the redacted description.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_config::{ApiType, LlmSettings};
use agent_config::{Config, ConfigError};
use common::{loader_with, parse};

const PROFILES: &str = r#"
[llm]
model = "gpt-4o"
base_url = "https://api.openai.com/v1"
api_key = "sk-default-0001"
max_tokens = 8192
temperature = 0.0
max_input_tokens = 50000

[llm.vision]
model = "gpt-4o-mini"
max_tokens = 1024

[llm.Manus]
temperature = 0.7
context_window = 64000

[llm.swe]
model = "deepseek-chat"
base_url = "https://api.deepseek.com/v1"
api_key = "sk-swe-0002"
supports_images = false

[llm.azure_one]
api_type = "Azure"
api_version = "2024-10-21"
deployment = "dep"
"#;

fn profiles() -> Config {
    parse(PROFILES).unwrap()
}

#[test]
fn the_default_section_is_the_default_llm() {
    let config = profiles();
    let d = config.default_llm();
    assert_eq!(d.model, "gpt-4o");
    assert_eq!(d.base_url, "https://api.openai.com/v1");
    assert_eq!(d.api_key.expose(), "sk-default-0001");
    assert_eq!(d.max_tokens, 8192);
    assert_eq!(d.temperature, 0.0);
    assert_eq!(d.max_input_tokens, Some(50000));
    assert_eq!(d.api_type, ApiType::Openai);
    assert_eq!(d.supports_images, None);
    // Keys not written take LlmSettings's defaults.
    let defaults = LlmSettings::new("x", "y");
    assert_eq!(d.max_attempts, defaults.max_attempts);
    assert_eq!(d.stream, defaults.stream);
}

#[test]
fn a_named_section_overrides_key_by_key_and_inherits_the_rest() {
    let config = profiles();
    let manus = config.llm_for("manus");
    assert_eq!(manus.temperature, 0.7);
    assert_eq!(manus.context_window, Some(64000));
    // Inherited from [llm].
    assert_eq!(manus.model, "gpt-4o");
    assert_eq!(manus.api_key.expose(), "sk-default-0001");
    assert_eq!(manus.max_tokens, 8192);
    assert_eq!(manus.max_input_tokens, Some(50000));

    let swe = config.llm_for("swe");
    assert_eq!(swe.model, "deepseek-chat");
    assert_eq!(swe.base_url, "https://api.deepseek.com/v1");
    assert_eq!(swe.api_key.expose(), "sk-swe-0002");
    assert_eq!(swe.supports_images, Some(false));
    assert_eq!(swe.temperature, 0.0);
    assert_eq!(swe.max_tokens, 8192);

    let azure = config.llm_for("azure_one");
    assert_eq!(
        azure.api_type,
        ApiType::Azure,
        "api_type matches case-insensitively"
    );
    assert_eq!(azure.api_version.as_deref(), Some("2024-10-21"));
    assert_eq!(azure.deployment.as_deref(), Some("dep"));
    assert_eq!(azure.model, "gpt-4o");

    // The default itself is untouched by the sections.
    assert_eq!(config.default_llm().temperature, 0.0);
    assert_eq!(config.default_llm().context_window, None);
}

#[test]
fn agent_names_match_case_insensitively_and_fall_back_to_the_default() {
    let config = profiles();
    // Section `[llm.Manus]` is found by the agent name `Manus` and by `manus`.
    assert_eq!(config.llm_for("Manus").temperature, 0.7);
    assert_eq!(config.llm_for("MANUS").temperature, 0.7);
    assert_eq!(config.llm_for("SWE").model, "deepseek-chat");
    // No [llm.mcp_agent]: the default.
    assert_eq!(config.llm_for("mcp_agent"), config.default_llm());
    assert_eq!(config.llm_profile("mcp_agent"), None);
    assert_eq!(config.llm_profile("Manus").unwrap().temperature, 0.7);
    assert_eq!(
        config.llm_profile_names().collect::<Vec<_>>(),
        ["azure_one", "manus", "swe", "vision"]
    );
}

#[test]
fn the_vision_section_is_the_image_model() {
    let config = profiles();
    let vision = config.vision_llm();
    assert_eq!(vision.model, "gpt-4o-mini");
    assert_eq!(vision.max_tokens, 1024);
    assert_eq!(
        vision.supports_images,
        Some(true),
        "[llm.vision] takes images"
    );
    assert_eq!(vision.base_url, "https://api.openai.com/v1");
    assert_eq!(vision.api_key.expose(), "sk-default-0001");
    assert_eq!(config.llm_for("vision"), vision);

    // Its own `supports_images` wins.
    let explicit = parse(&format!(
        "{}[llm.vision]\nmodel = \"m\"\nsupports_images = false\n",
        common::LLM
    ))
    .unwrap();
    assert_eq!(explicit.vision_llm().supports_images, Some(false));

    // No [llm.vision]: the default model, as it is.
    let none = parse(common::LLM).unwrap();
    assert_eq!(none.vision_llm(), none.default_llm());
    assert_eq!(none.vision_llm().supports_images, None);
}

#[test]
fn an_llm_default_section_replaces_the_default_as_in_openmanus() {
    let config = parse(&format!(
        "{}[llm.default]\nmodel = \"other\"\n[llm.x]\nmax_tokens = 7\n",
        common::LLM
    ))
    .unwrap();
    assert_eq!(config.default_llm().model, "other");
    assert_eq!(config.llm_for("unknown").model, "other");
    // Other sections still merge over [llm] itself.
    assert_eq!(config.llm_for("x").model, "gpt-4o");
}

#[test]
fn inline_and_dotted_sub_tables_are_sections_too() {
    let config = parse(
        "[llm]\nmodel = \"m\"\nbase_url = \"u\"\nvision = { model = \"v\" }\nswe.model = \"s\"\n",
    )
    .unwrap();
    assert_eq!(config.vision_llm().model, "v");
    assert_eq!(config.llm_for("swe").model, "s");
    assert_eq!(config.llm_for("swe").base_url, "u");
}

#[test]
fn api_keys_come_from_the_environment() {
    let config = loader_with(&[("OPENAI_API_KEY", "sk-from-env-123"), ("V_KEY", "sk-v-456")])
        .parse_str(
            "[llm]\nmodel = \"m\"\nbase_url = \"${BASE:-http://localhost:8000/v1}\"\n\
             api_key = \"${OPENAI_API_KEY}\"\n[llm.vision]\napi_key = \"${V_KEY}\"\n\
             [llm.swe]\napi_key = \"$${LITERAL}\"\n",
        )
        .unwrap();
    assert_eq!(config.default_llm().api_key.expose(), "sk-from-env-123");
    assert_eq!(config.default_llm().base_url, "http://localhost:8000/v1");
    assert_eq!(config.vision_llm().api_key.expose(), "sk-v-456");
    assert_eq!(config.llm_for("swe").api_key.expose(), "${LITERAL}");
    assert_eq!(
        config.env_references().collect::<Vec<_>>(),
        [
            ("llm.api_key", "OPENAI_API_KEY"),
            ("llm.base_url", "BASE"),
            ("llm.vision.api_key", "V_KEY")
        ]
    );
}

#[test]
fn the_process_environment_is_read_by_default() {
    // PATH is set in any test environment; the test does not modify the environment.
    let result =
        Config::from_toml_str("[llm]\nmodel = \"m\"\nbase_url = \"u\"\napi_key = \"${PATH}\"\n");
    match std::env::var("PATH") {
        Ok(path) => assert_eq!(result.unwrap().default_llm().api_key.expose(), path),
        Err(_) => assert!(matches!(result, Err(ConfigError::EnvVar { .. }))),
    }
}

#[test]
fn describe_redacts_the_key_and_says_where_settings_come_from() {
    let config = loader_with(&[("K", "sk-very-secret-999")])
        .parse_str(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"https://api.openai.com/v1\"\n\
             api_key = \"${K}\"\n[llm.vision]\nmodel = \"gpt-4o-mini\"\n\
             [llm.swe]\napi_key = \"sk-literal-777\"\n",
        )
        .unwrap();
    let vision = config.describe_llm("vision");
    assert!(
        vision.starts_with("# LLM settings for `vision`: [llm.vision] over [llm]\n"),
        "{vision}"
    );
    assert!(
        vision.contains("# api_key is read from the environment variable K\n"),
        "{vision}"
    );
    assert!(vision.contains("model = \"gpt-4o-mini\"\n"), "{vision}");
    assert!(vision.contains("api_key = \"<redacted>\"\n"), "{vision}");
    assert!(vision.contains("supports_images = true\n"), "{vision}");

    let swe = config.describe_llm("SWE");
    assert!(
        swe.starts_with("# LLM settings for `swe`: [llm.swe] over [llm]\n"),
        "{swe}"
    );
    assert!(
        !swe.contains("environment variable"),
        "its own key is literal: {swe}"
    );

    let manus = config.describe_llm("Manus");
    assert!(
        manus.starts_with("# LLM settings for `manus`: [llm] (there is no [llm.manus] section)\n"),
        "{manus}"
    );

    let all = config.describe_llms();
    assert!(
        all.starts_with("# LLM settings for `default`: [llm]\n"),
        "{all}"
    );
    assert!(all.contains("`swe`") && all.contains("`vision`"), "{all}");
    for text in [&vision, &swe, &manus, &all] {
        assert!(!text.contains("sk-very-secret-999") && !text.contains("sk-literal-777"));
    }
    assert!(!format!("{config:?}").contains("sk-very-secret-999"));
}

#[test]
fn code_built_configs_have_profiles_too() {
    let config = Config::new(LlmSettings::new("m", "http://localhost:1/v1"))
        .with_llm_profile("Vision", LlmSettings::new("v", "http://localhost:2/v1"));
    assert_eq!(config.vision_llm().model, "v");
    assert_eq!(config.llm_for("manus").model, "m");
    assert!(
        config
            .describe_llm("vision")
            .contains("[llm.vision] over [llm]")
    );
}

#[test]
fn describe_follows_the_llm_default_fallback() {
    let config = parse(&format!(
        "{}[llm.default]\nmodel = \"other\"\n",
        common::LLM
    ))
    .unwrap();
    assert!(
        config
            .describe_llm("manus")
            .starts_with("# LLM settings for `manus`: [llm.default] over [llm] (there is no [llm.manus] section)\nmodel = \"other\"\n"),
        "{}",
        config.describe_llm("manus")
    );
    assert!(
        config
            .describe_llm("default")
            .starts_with("# LLM settings for `default`: [llm.default] over [llm]\n")
    );
}
