//! Helpers shared by the integration tests. The process environment is never modified: loaders
//! get an injected environment instead.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;

use agent_config::{Config, ConfigError, ConfigLoader};

/// The smallest valid `[llm]`.
pub const LLM: &str = "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"https://api.openai.com/v1\"\n";

/// A loader with no base directory and exactly these environment variables.
pub fn loader_with(vars: &[(&str, &str)]) -> ConfigLoader {
    ConfigLoader::new("").with_env(env_of(vars))
}

/// An environment lookup over `vars` only.
pub fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

/// Parses `text` with an empty environment.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    loader_with(&[]).parse_str(text)
}

/// `LLM` followed by `rest`, parsed.
pub fn with_llm(rest: &str) -> Config {
    parse(&format!("{LLM}{rest}")).unwrap()
}

/// Writes `text` to `dir/rel`, creating parent directories.
pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
