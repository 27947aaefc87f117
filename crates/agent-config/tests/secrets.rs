//! What a configuration withholds from tool processes (issue 21: secrets stay with the client).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use agent_config::{ConfigLoader, DEFAULT_SECRET_ENV};

fn loader(vars: &[(&str, &str)]) -> ConfigLoader {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    ConfigLoader::new(".").with_env(move |name| vars.get(name).cloned())
}

fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn named_resolved_and_listed_variables_are_withheld_and_allowed_ones_kept() {
    let process = [
        ("MY_KEY_VAR", "sk-through-a-reference"),
        ("COPY_OF_THE_KEY", "sk-written-in-the-file"),
        ("VISION_KEY", "sk-vision-profile-key"),
        ("SHORT", "abc"),
        ("PORT", "8080"),
        ("HOME", "/root"),
        ("GITHUB_TOKEN", "ghp-needed-by-git"),
    ];
    let config = loader(&process)
        .parse_str(
            "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             api_key = \"sk-written-in-the-file\"\n\
             [llm.vision]\napi_key = \"${VISION_KEY}\"\n\
             [llm.swe]\napi_key = \"${MY_KEY_VAR}\"\n\
             [agent]\ntool_env_deny = [\"GITHUB_TOKEN\", \"EXTRA\"]\n\
             tool_env_allow = [\"GROQ_API_KEY\"]\n",
        )
        .unwrap();
    let names = config.secret_env_names(env(&process));
    for withheld in [
        "MY_KEY_VAR",
        "VISION_KEY",
        "COPY_OF_THE_KEY",
        "GITHUB_TOKEN",
        "EXTRA",
    ] {
        assert!(
            names.contains(withheld),
            "{withheld} reaches the tools: {names:?}"
        );
    }
    assert!(names.contains("OPENAI_API_KEY") && names.contains("ANTHROPIC_API_KEY"));
    for kept in ["SHORT", "PORT", "HOME", "GROQ_API_KEY"] {
        assert!(!names.contains(kept), "{kept} is withheld: {names:?}");
    }
    assert_eq!(
        names.len(),
        DEFAULT_SECRET_ENV.len() - 1 + 5,
        "the defaults less the allowed one, and the five above: {names:?}"
    );
}

#[test]
fn the_files_are_secret_only_when_there_are_files() {
    let inline = loader(&[])
        .parse_str("[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n")
        .unwrap();
    assert!(inline.secret_files().is_empty());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let loaded = loader(&[]).load_file(&path).unwrap();
    // mcp.json beside it is named too (whether or not it exists yet).
    assert_eq!(loaded.secret_files(), [path, dir.path().join("mcp.json")]);
}
