//! The lookup order: `--config`, `OPENMANUS_CONFIG`, `config/config.toml`,
//! `config/config.example.toml`; `mcp.json` beside the chosen file. The environment is injected,
//! never modified.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_config::{CONFIG_ENV, ConfigError, ConfigLoader, ConfigOrigin};
use common::{env_of, write};

fn llm(model: &str) -> String {
    format!("[llm]\nmodel = \"{model}\"\nbase_url = \"http://localhost:1/v1\"\n")
}

/// A base directory with every candidate present, each with its own model name.
fn all_candidates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config/config.toml", &llm("from-config-toml"));
    write(
        dir.path(),
        "config/config.example.toml",
        &llm("from-example"),
    );
    write(dir.path(), "elsewhere/env.toml", &llm("from-env"));
    write(dir.path(), "cli/explicit.toml", &llm("from-explicit"));
    dir
}

#[test]
fn the_explicit_path_wins() {
    let dir = all_candidates();
    let config = ConfigLoader::new(dir.path())
        .explicit_path(Some("cli/explicit.toml".into()))
        .with_env(env_of(&[(CONFIG_ENV, "elsewhere/env.toml")]))
        .load()
        .unwrap();
    assert_eq!(config.default_llm().model, "from-explicit");
    assert_eq!(config.source().origin, ConfigOrigin::Explicit);
    assert_eq!(config.source().path, dir.path().join("cli/explicit.toml"));
}

#[test]
fn then_the_environment_variable() {
    let dir = all_candidates();
    let config = ConfigLoader::new(dir.path())
        .with_env(env_of(&[(CONFIG_ENV, "elsewhere/env.toml")]))
        .load()
        .unwrap();
    assert_eq!(config.default_llm().model, "from-env");
    assert_eq!(config.source().origin, ConfigOrigin::EnvVar);

    // An absolute path works the same; an empty variable is ignored.
    let absolute = dir.path().join("elsewhere/env.toml");
    let config = ConfigLoader::new("/nonexistent-base")
        .with_env(env_of(&[(CONFIG_ENV, absolute.to_str().unwrap())]))
        .load()
        .unwrap();
    assert_eq!(config.default_llm().model, "from-env");
    let config = ConfigLoader::new(dir.path())
        .with_env(env_of(&[(CONFIG_ENV, "")]))
        .load()
        .unwrap();
    assert_eq!(config.source().origin, ConfigOrigin::ConfigToml);
}

#[test]
fn then_config_toml_then_the_example() {
    let dir = all_candidates();
    let loader = ConfigLoader::new(dir.path()).with_env(env_of(&[]));
    let config = loader.load().unwrap();
    assert_eq!(config.default_llm().model, "from-config-toml");
    assert_eq!(config.source().origin, ConfigOrigin::ConfigToml);
    assert_eq!(config.source().path, dir.path().join("config/config.toml"));

    std::fs::remove_file(dir.path().join("config/config.toml")).unwrap();
    let config = loader.load().unwrap();
    assert_eq!(config.default_llm().model, "from-example");
    assert_eq!(config.source().origin, ConfigOrigin::Example);
    assert_eq!(
        config.source().to_string(),
        format!(
            "{} (from the config directory, example fallback)",
            dir.path().join("config/config.example.toml").display()
        )
    );
}

#[test]
fn a_missing_configuration_lists_the_paths_searched() {
    let dir = tempfile::tempdir().unwrap();
    let loader = ConfigLoader::new(dir.path()).with_env(env_of(&[]));
    let err = loader.load().unwrap_err();
    let toml = dir.path().join("config/config.toml");
    let example = dir.path().join("config/config.example.toml");
    match &err {
        ConfigError::NotFound { searched } => {
            assert_eq!(searched, &[toml.clone(), example.clone()])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "no configuration file found; searched {}, {}. Run `openmanus config init` to write \
             one (in the per-user configuration directory), or pass --config <file>",
            toml.display(),
            example.display()
        )
    );
    assert_eq!(
        loader
            .candidates()
            .into_iter()
            .map(|c| c.origin)
            .collect::<Vec<_>>(),
        [ConfigOrigin::ConfigToml, ConfigOrigin::Example]
    );
}

#[test]
fn a_named_file_that_does_not_exist_is_an_error_not_a_fall_through() {
    let dir = all_candidates();
    let err = ConfigLoader::new(dir.path())
        .explicit_path(Some("nope.toml".into()))
        .with_env(env_of(&[]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "configuration file {} (named by --config) does not exist",
            dir.path().join("nope.toml").display()
        )
    );

    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[(CONFIG_ENV, "missing.toml")]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "configuration file {} (named by OPENMANUS_CONFIG) does not exist",
            dir.path().join("missing.toml").display()
        )
    );
}

#[test]
fn mcp_json_is_read_beside_the_chosen_file() {
    let dir = all_candidates();
    write(
        dir.path(),
        "config/mcp.json",
        r#"{"mcpServers": {"local": {"command": "my-server"}}}"#,
    );
    write(
        dir.path(),
        "cli/mcp.json",
        r#"{"mcpServers": {"remote": {"type": "sse", "url": "http://127.0.0.1:8000/sse"}}}"#,
    );
    let loader = ConfigLoader::new(dir.path()).with_env(env_of(&[]));
    let config = loader.load().unwrap();
    assert_eq!(
        config.mcp_path(),
        Some(dir.path().join("config/mcp.json").as_path())
    );
    assert_eq!(config.mcp.servers.len(), 1);
    assert!(config.mcp.server("local").is_some());

    let config = loader
        .clone()
        .explicit_path(Some("cli/explicit.toml".into()))
        .load()
        .unwrap();
    assert_eq!(config.mcp.servers.len(), 1);
    assert_eq!(config.mcp.servers[0].id, "remote");

    // No mcp.json: no servers.
    let config = loader
        .explicit_path(Some("elsewhere/env.toml".into()))
        .load()
        .unwrap();
    assert!(config.mcp.servers.is_empty());
    assert_eq!(
        config.mcp_path(),
        Some(dir.path().join("elsewhere/mcp.json").as_path())
    );
}

#[test]
fn a_bad_mcp_json_fails_the_load() {
    let dir = all_candidates();
    write(
        dir.path(),
        "config/mcp.json",
        r#"{"mcpServers": {"x": {"type": "sse"}}}"#,
    );
    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: MCP server `x`, field `url`: an sse server needs a url",
            dir.path().join("config/mcp.json").display()
        )
    );
}

#[test]
fn load_and_from_file_shortcuts() {
    let dir = all_candidates();
    // Config::load uses the process environment; OPENMANUS_CONFIG is not set by the test
    // harness, so skip the check if someone has it set.
    if std::env::var_os(CONFIG_ENV).is_none() {
        let config = agent_config::Config::load(dir.path(), None).unwrap();
        assert_eq!(config.default_llm().model, "from-config-toml");
    }
    let config =
        agent_config::Config::load(dir.path(), Some(std::path::Path::new("cli/explicit.toml")))
            .unwrap();
    assert_eq!(config.default_llm().model, "from-explicit");
    let config = agent_config::Config::from_file(dir.path().join("elsewhere/env.toml")).unwrap();
    assert_eq!(config.default_llm().model, "from-env");
    assert_eq!(config.source().origin, ConfigOrigin::Explicit);
    assert!(matches!(
        agent_config::Config::from_file(dir.path().join("none.toml")),
        Err(ConfigError::Missing { .. })
    ));
}

#[test]
fn the_per_user_file_comes_after_config_toml_and_before_the_example() {
    let dir = all_candidates();
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/openmanus/config.toml",
        &llm("from-user"),
    );
    let home_str = home.path().to_str().unwrap().to_owned();
    let loader = ConfigLoader::new(dir.path()).with_env(env_of(&[("HOME", &home_str)]));
    assert_eq!(
        loader
            .candidates()
            .into_iter()
            .map(|c| c.origin)
            .collect::<Vec<_>>(),
        [
            ConfigOrigin::ConfigToml,
            ConfigOrigin::User,
            ConfigOrigin::Example
        ]
    );
    // ./config/config.toml wins over the per-user file...
    assert_eq!(
        loader.load().unwrap().default_llm().model,
        "from-config-toml"
    );
    // ...which wins over the example.
    std::fs::remove_file(dir.path().join("config/config.toml")).unwrap();
    let config = loader.load().unwrap();
    assert_eq!(config.default_llm().model, "from-user");
    assert_eq!(config.source().origin, ConfigOrigin::User);
    assert_eq!(
        config.source().path,
        home.path().join(".config/openmanus/config.toml")
    );

    // $XDG_CONFIG_HOME, when set to an absolute path, replaces ~/.config.
    let xdg = tempfile::tempdir().unwrap();
    write(xdg.path(), "openmanus/config.toml", &llm("from-xdg"));
    let xdg_str = xdg.path().to_str().unwrap().to_owned();
    let loader = ConfigLoader::new(dir.path()).with_env(env_of(&[
        ("HOME", &home_str),
        ("XDG_CONFIG_HOME", &xdg_str),
    ]));
    assert_eq!(
        loader.user_config_path(),
        Some(xdg.path().join("openmanus/config.toml"))
    );
    assert_eq!(loader.load().unwrap().default_llm().model, "from-xdg");
    // A relative XDG_CONFIG_HOME is ignored, as the XDG specification says.
    let loader = ConfigLoader::new(dir.path())
        .with_env(env_of(&[("HOME", &home_str), ("XDG_CONFIG_HOME", "rel")]));
    assert_eq!(loader.load().unwrap().default_llm().model, "from-user");
}

#[test]
fn not_found_names_config_init_and_the_per_user_path() {
    let dir = tempfile::tempdir().unwrap();
    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[("HOME", "/home/someone")]))
        .load()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/home/someone/.config/openmanus/config.toml"),
        "{text}"
    );
    assert!(text.contains("openmanus config init"), "{text}");
}
