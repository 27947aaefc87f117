//! Command-line overrides (`-c KEY=VALUE`, `--model`): applied to the file's keys before
//! validation, checked exactly as the file is, and named in their errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_config::{ConfigError, ConfigOverride};
use common::{env_of, loader_with, write};

fn over(text: &str) -> ConfigOverride {
    text.parse().unwrap()
}

const FILE: &str = "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"https://api.openai.com/v1\"\n\
                    temperature = 1.0\n\n[llm.swe]\nmodel = \"o3\"\n\n[llm.vision]\n\
                    model = \"gpt-4o-mini\"\n";

#[test]
fn overrides_replace_and_add_keys_with_their_toml_types() {
    let config = loader_with(&[])
        .with_overrides([
            over("llm.temperature=0.25"),
            over("agent.max_steps=7"),
            over("llm.swe.max_tokens=999"),
            over("search.fallback_engines=[\"Bing\"]"),
        ])
        .parse_str(FILE)
        .unwrap();
    assert_eq!(config.default_llm().temperature, 0.25);
    assert_eq!(config.agent.max_steps, Some(7));
    assert_eq!(config.llm_for("swe").max_tokens, 999);
    assert_eq!(config.search.fallback_engines, ["Bing"]);
    // The rest of the file is untouched.
    assert_eq!(config.llm_for("swe").model, "o3");
}

#[test]
fn model_replaces_every_model_but_the_vision_one() {
    let config = loader_with(&[])
        .with_overrides([ConfigOverride::model("local-model")])
        .parse_str(FILE)
        .unwrap();
    assert_eq!(config.default_llm().model, "local-model");
    assert_eq!(config.llm_for("swe").model, "local-model");
    assert_eq!(config.llm_for("manus").model, "local-model");
    assert_eq!(config.vision_llm().model, "gpt-4o-mini");
}

#[test]
fn an_unknown_key_is_an_error_naming_the_override() {
    let err = loader_with(&[])
        .with_overrides([over("llm.temprature=0.2")])
        .parse_str(FILE)
        .unwrap_err();
    assert!(matches!(err, ConfigError::Override { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.starts_with("llm.temprature=0.2: "), "{text}");
    assert!(text.contains("unknown field `temprature`"), "{text}");

    let err = loader_with(&[])
        .with_overrides([over("nosuch.key=1")])
        .parse_str(FILE)
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("nosuch.key=1: "), "{text}");
    assert!(text.contains("unknown field `nosuch`"), "{text}");
}

#[test]
fn a_mistyped_value_is_an_error_naming_the_override() {
    let err = loader_with(&[])
        .with_overrides([over("agent.max_steps=many")])
        .parse_str(FILE)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent.max_steps=many: `agent.max_steps`: invalid type: a string, expected u32"
    );
    let err = loader_with(&[])
        .with_overrides([over("llm.model.name=x")])
        .parse_str(FILE)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "llm.model.name=x: `llm.model` is a value, not a table"
    );
}

#[test]
fn errors_in_the_file_keep_their_own_positions() {
    let text = "[llm]\nmodel = \"m\"\nbase_url = \"u\"\nmax_tokens = \"lots\"\n";
    let err = loader_with(&[])
        .with_overrides([over("agent.max_steps=3")])
        .parse_str(text)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "<string>:4:14: `llm.max_tokens`: invalid type: a string, expected u32"
    );
}

#[test]
fn environment_references_survive_overrides() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config/config.toml",
        "[llm]\nmodel = \"m\"\nbase_url = \"u\"\napi_key = \"${KEY}\"\n",
    );
    let config = agent_config::ConfigLoader::new(dir.path())
        .with_env(env_of(&[("KEY", "sk-from-env")]))
        .with_overrides([over("llm.max_tokens=10")])
        .load()
        .unwrap();
    assert_eq!(config.default_llm().api_key.expose(), "sk-from-env");
    assert_eq!(config.default_llm().max_tokens, 10);
    assert_eq!(
        config.env_references().collect::<Vec<_>>(),
        [("llm.api_key", "KEY")]
    );
}

#[test]
fn keys_that_do_nothing_are_reported() {
    let config = loader_with(&[])
        .parse_str(&format!(
            "{FILE}\n[mcp]\nserver_reference = \"app.mcp.server\"\n\n[daytona]\ndaytona_api_key = \"k\"\n"
        ))
        .unwrap();
    let keys: Vec<&str> = config.inert_keys().map(|(k, _)| k).collect();
    assert_eq!(keys, ["daytona", "mcp.server_reference"]);
    let config = loader_with(&[]).parse_str(FILE).unwrap();
    assert_eq!(config.inert_keys().count(), 0);
}

#[test]
fn an_override_reaches_into_nested_tables_and_creates_missing_sections() {
    let file = format!("{FILE}\n[browser]\nheadless = true\n");
    let config = loader_with(&[])
        .with_overrides([
            // [browser] is in the file, [browser.proxy] is not; [sandbox] is not at all.
            over("browser.proxy.server=http://127.0.0.1:3128"),
            over("browser.proxy.username=me"),
            over("sandbox.use_sandbox=true"),
            over("search.base_urls.bing=\"http://127.0.0.1:9/bing\""),
        ])
        .parse_str(&file)
        .unwrap();
    assert_eq!(config.browser.headless, Some(true));
    let proxy = config.browser.proxy.as_ref().unwrap();
    assert_eq!(proxy.server, "http://127.0.0.1:3128");
    assert_eq!(proxy.username.as_deref(), Some("me"));
    assert!(config.sandbox.use_sandbox);
    assert_eq!(
        config.search.base_urls.bing.as_deref(),
        Some("http://127.0.0.1:9/bing")
    );
}

#[test]
fn a_bad_key_deep_in_an_override_names_the_override_and_the_key() {
    let err = loader_with(&[])
        .with_overrides([over("agent.max_steps=3"), over("browser.proxy.sever=x")])
        .parse_str(FILE)
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("browser.proxy.sever=x: "), "{text}");
    assert!(text.contains("unknown field `sever`"), "{text}");

    // Inside an inline table: the key inside the value is named.
    let err = loader_with(&[])
        .with_overrides([over("search.base_urls={ bing = 3 }")])
        .parse_str(FILE)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "search.base_urls={ bing = 3 }: `search.base_urls.bing`: invalid type: an integer, \
         expected a string"
    );
}

#[test]
fn an_override_value_may_read_the_environment() {
    let config = loader_with(&[("KEY", "sk-from-env")])
        .with_overrides([over("llm.api_key=\"${KEY}\"")])
        .parse_str(FILE)
        .unwrap();
    assert_eq!(config.default_llm().api_key.expose(), "sk-from-env");
    assert_eq!(
        config.env_references().collect::<Vec<_>>(),
        [("llm.api_key", "KEY")]
    );
    let err = loader_with(&[])
        .with_overrides([over("llm.api_key=${NOPE}")])
        .parse_str(FILE)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "llm.api_key=${NOPE}: `llm.api_key` reads the environment variable `NOPE`, which is not set"
    );
}

#[test]
fn an_override_can_mend_the_file_and_a_file_error_it_does_not_touch_is_the_files() {
    let text = "[llm]\nmodel = \"m\"\nbase_url = \"u\"\nmax_tokens = \"lots\"\n";
    let config = loader_with(&[])
        .with_overrides([over("llm.max_tokens=10")])
        .parse_str(text)
        .unwrap();
    assert_eq!(config.default_llm().max_tokens, 10);

    // No [llm] in the file: an override of another [llm] key does not make it one, and the
    // error is the file's, with no line (the file has no [llm] header).
    let without = "[agent]\nmax_steps = 3\n";
    let plain = loader_with(&[]).parse_str(without).unwrap_err();
    let err = loader_with(&[])
        .with_overrides([over("llm.temperature=0.5")])
        .parse_str(without)
        .unwrap_err();
    assert!(
        matches!(err, ConfigError::MissingKey { line: None, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), plain.to_string());
}

#[test]
fn a_file_that_is_not_toml_is_reported_as_it_is() {
    let text = "[llm\nmodel = \"m\"\n";
    let plain = loader_with(&[]).parse_str(text).unwrap_err();
    let err = loader_with(&[])
        .with_overrides([over("llm.model=x")])
        .parse_str(text)
        .unwrap_err();
    assert!(
        matches!(err, ConfigError::Syntax { line: 1, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), plain.to_string());
}
