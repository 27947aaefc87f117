//! Every error names the file, the line and column, and the key. The files are real files, so
//! the messages carry real paths.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use agent_config::{Config, ConfigError, ConfigLoader};
use common::{env_of, parse, write};

/// Writes `text` as `<tmp>/config/config.toml`, loads it, and returns the error and the path.
fn load_err(text: &str) -> (ConfigError, String) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config/config.toml", text);
    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[]))
        .load()
        .unwrap_err();
    let path = dir.path().join("config/config.toml").display().to_string();
    (err, path)
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let (err, path) = load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\" extra\n");
    assert!(
        matches!(
            err,
            ConfigError::Syntax {
                line: 3,
                column: 16,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("{path}:3:16: invalid TOML: unexpected key or value, expected newline, `#`")
    );
    assert_eq!(err.path(), Some(Path::new(&path)));

    let (err, path) = load_err("[llm\nmodel = \"m\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}:1:5: invalid TOML: unclosed table, expected `]`")
    );
}

#[test]
fn a_wrong_type_names_the_key_and_its_position() {
    let (err, path) =
        load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\"\n\n[llm.vision]\nmax_tokens = \"many\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}:6:14: `llm.vision.max_tokens`: invalid type: a string, expected u32")
    );
    match err {
        ConfigError::Invalid {
            line, column, key, ..
        } => assert_eq!(
            (line, column, key.as_str()),
            (6, 14, "llm.vision.max_tokens")
        ),
        other => panic!("{other:?}"),
    }

    let (err, path) = load_err(&format!("{}[sandbox]\ntimeout = -1\n", common::LLM));
    assert_eq!(
        err.to_string(),
        format!("{path}:5:11: `sandbox.timeout`: invalid value: an integer, expected u64")
    );

    let (err, path) = load_err(&format!(
        "{}[search]\nfallback_engines = [\"Bing\", 3]\n",
        common::LLM
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "{path}:5:29: `search.fallback_engines`: invalid type: an integer, expected a string"
        )
    );
}

#[test]
fn an_unknown_key_is_an_error_naming_it() {
    let (err, path) = load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\"\nmax_token = 100\n");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{path}:4:1: `llm.max_token`: unknown field `max_token`, expected one of `model`"
        )),
        "{text}"
    );

    let (err, path) = load_err(&format!("{}[browser]\nheadles = true\n", common::LLM));
    assert!(
        err.to_string().starts_with(&format!(
            "{path}:5:1: `browser.headles`: unknown field `headles`, expected one of `headless`"
        )),
        "{err}"
    );

    // An unknown section too.
    let (err, path) = load_err(&format!("{}[serach]\nengine = \"Bing\"\n", common::LLM));
    assert!(
        err.to_string().starts_with(&format!(
            "{path}:4:2: `serach`: unknown field `serach`, expected one of `browser`, `search`"
        )),
        "{err}"
    );

    // Policies accept their documented values only.
    let (err, path) = load_err(&format!(
        "{}[agent]\nnext_step_prompt = \"never\"\n",
        common::LLM
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "{path}:5:20: `agent.next_step_prompt`: unknown variant, expected `append` or \
             `ephemeral`"
        )
    );
}

#[test]
fn a_missing_required_key_names_the_section() {
    let (err, path) = load_err("# comment\n[llm]\nmodel = \"gpt-4o\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}:2: the required key `base_url` is missing from [llm]")
    );
    match &err {
        ConfigError::MissingKey {
            section, key, line, ..
        } => assert_eq!(
            (section.as_str(), key.as_str(), *line),
            ("llm", "base_url", Some(2))
        ),
        other => panic!("{other:?}"),
    }

    let (err, path) = load_err("[llm]\nbase_url = \"u\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}:1: the required key `model` is missing from [llm]")
    );

    // No [llm] at all (OpenManus fails with a pydantic error here).
    let (err, path) = load_err("[search]\nengine = \"Bing\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}: the required key `model` is missing from [llm]")
    );

    // A named section inherits them, so it never lacks them.
    assert!(
        parse("[llm]\nmodel = \"m\"\nbase_url = \"u\"\n[llm.vision]\nmax_tokens = 1\n").is_ok()
    );
}

#[test]
fn an_unset_environment_variable_names_the_key_and_the_variable() {
    let (err, path) = load_err(
        "[llm]\nmodel = \"m\"\nbase_url = \"u\"\n[llm.vision]\napi_key = \"${VISION_KEY}\"\n",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{path}:5:11: `llm.vision.api_key` reads the environment variable `VISION_KEY`, which \
             is not set"
        )
    );
    match err {
        ConfigError::EnvVar { key, var, .. } => {
            assert_eq!(
                (key.as_str(), var.as_str()),
                ("llm.vision.api_key", "VISION_KEY")
            );
        }
        other => panic!("{other:?}"),
    }

    let (err, path) =
        load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\"\napi_key = \"${OPENAI-KEY}\"\n");
    assert!(
        err.to_string().starts_with(&format!(
            "{path}:4:11: `llm.api_key`: `${{OPENAI-KEY}}` is not a valid environment reference"
        )),
        "{err}"
    );
}

#[test]
fn openmanus_values_we_cannot_honour_are_explained() {
    let (err, path) = load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\"\napi_type = \"bedrock\"\n");
    assert!(
        err.to_string().starts_with(&format!("{path}:4:12: ")) && err.to_string().contains("aws"),
        "{err}"
    );
    let (err, path) =
        load_err("[llm]\nmodel = \"m\"\nbase_url = \"u\"\ntool_call_mode = \"json\"\n");
    assert!(
        err.to_string().starts_with(&format!("{path}:4:"))
            && err.to_string().contains("`native`, `text`, `auto`"),
        "{err}"
    );

    let (err, _) = load_err(
        "[llm]\nmodel = \"m\"\nbase_url = \"u\"\n[llm.Vision]\nmodel = \"a\"\n[llm.vision]\nmodel = \"b\"\n",
    );
    assert!(
        err.to_string()
            .contains("a second [llm.*] section named `vision`"),
        "{err}"
    );

    let (err, path) = load_err("llm = \"gpt-4o\"\n");
    assert_eq!(
        err.to_string(),
        format!("{path}:1:1: `llm`: expected a table ([llm])")
    );

    // mcp servers live in mcp.json, not in [mcp].
    let (err, _) = load_err(&format!("{}[mcp]\nservers = {{}}\n", common::LLM));
    assert!(
        err.to_string()
            .contains("`mcp.servers`: unknown field `servers`"),
        "{err}"
    );
}

#[test]
fn strings_parse_errors_are_called_string() {
    let err = Config::from_toml_str("[llm]\nmodel = 1\n").unwrap_err();
    assert!(err.to_string().starts_with("<string>:"), "{err}");
}

#[test]
fn an_unreadable_file_is_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be: it is not a file, so the lookup skips it.
    std::fs::create_dir_all(dir.path().join("config/config.toml")).unwrap();
    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[]))
        .load()
        .unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");

    // Invalid UTF-8 cannot be read as text.
    write(dir.path(), "bad.toml", "");
    std::fs::write(dir.path().join("bad.toml"), [0xff, 0xfe, b'\n']).unwrap();
    let err = ConfigLoader::new(dir.path())
        .with_env(env_of(&[]))
        .load_file("bad.toml")
        .unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    assert!(err.to_string().starts_with("cannot read "), "{err}");
}

/// Issue 21: a value under the wrong key (a key pasted into `max_tokens`, `api_type` or an MCP
/// server's `args`) is never echoed: the message names the key, the kind of value and where it
/// is, and that is all.
#[test]
fn a_wrong_value_is_never_echoed() {
    let secret = "sk-proj-Zq8x1Secret0123456789";
    for (key, line) in [
        ("max_tokens", format!("max_tokens = \"{secret}\"")),
        ("api_type", format!("api_type = \"{secret}\"")),
        ("temperature", format!("temperature = [\"{secret}\"]")),
    ] {
        let (err, path) = load_err(&format!("[llm]\nmodel = \"m\"\nbase_url = \"u\"\n{line}\n"));
        let text = err.to_string();
        assert!(!text.contains("Secret0123"), "{text}");
        assert!(
            text.starts_with(&format!("{path}:4:")) && text.contains(&format!("`llm.{key}`")),
            "{text}"
        );
    }
    let mcp = format!(r#"{{"mcpServers": {{"a": {{"command": "x", "args": "{secret}"}}}}}}"#);
    let text = agent_config::parse_mcp_servers(&mcp, std::path::Path::new("mcp.json"))
        .unwrap_err()
        .to_string();
    assert!(!text.contains("Secret0123"), "{text}");
}

#[test]
fn a_store_url_is_a_postgres_one_and_not_beside_a_path() {
    let llm = "[llm]\nmodel = \"m\"\nbase_url = \"u\"\n\n";
    let (err, path) = load_err(&format!(
        "{llm}[store]\npath = \"s.db\"\nurl = \"postgres://me@db/sessions\"\n"
    ));
    let message = err.to_string();
    assert!(message.starts_with(&format!("{path}:")), "{message}");
    assert!(
        message.contains("`path` and `url` both name a session store"),
        "{message}"
    );
    let (err, _) = load_err(&format!("{llm}[store]\nurl = \"sqlite://s.db\"\n"));
    assert!(err.to_string().contains("a SQLite file is `path`"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config/config.toml",
        &format!("{llm}[store]\nurl = \"postgresql://me@db:5433/sessions\"\npath = \"\"\n"),
    );
    let config: Config = ConfigLoader::new(dir.path())
        .with_env(env_of(&[]))
        .load()
        .unwrap();
    assert_eq!(
        config.store.url.as_deref(),
        Some("postgresql://me@db:5433/sessions")
    );
    assert_eq!(config.store.path, None);
}
