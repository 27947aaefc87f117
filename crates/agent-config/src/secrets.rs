//! What a configuration holds that tool processes must not see: the environment variables
//! holding provider keys and tokens, and the files themselves (see `docs/security.md`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::Config;

/// Variables withheld from tool processes whatever the configuration says (unless
/// `[agent] tool_env_allow` names them): the usual names of model providers' keys.
pub const DEFAULT_SECRET_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DASHSCOPE_API_KEY",
    "DAYTONA_API_KEY",
    "BRAVE_API_KEY",
    // The OpenTelemetry exporter's headers: a collector's credentials (Langfuse's basic auth).
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];

/// Shortest secret value matched against the environment: shorter values (a port, a flag)
/// would withhold unrelated variables.
const MIN_SECRET_LEN: usize = 8;

impl Config {
    /// The secret values this configuration resolved: every LLM profile's API key, the
    /// Daytona key, the Brave search key, the telemetry export's header values (values
    /// shorter than 8 bytes are left out). Tool processes do not see variables holding them;
    /// captured telemetry content has them replaced.
    #[must_use]
    pub fn secret_values(&self) -> BTreeSet<String> {
        let mut values: BTreeSet<String> = std::iter::once(self.default_llm())
            .chain(self.llm_profile_names().filter_map(|n| self.llm_profile(n)))
            .map(|llm| llm.api_key.expose().to_owned())
            .collect();
        if let Some(daytona) = &self.daytona {
            values.insert(daytona.daytona_api_key.expose().to_owned());
        }
        values.extend(self.search.brave_api_key.clone());
        values.extend(self.telemetry.headers.values().cloned());
        values.retain(|v| v.len() >= MIN_SECRET_LEN);
        values
    }

    /// The environment variables to withhold from tool processes (bash, python, sandbox shells,
    /// MCP stdio servers), given the process environment `env`:
    ///
    /// * the variables `config.toml` read values from (`${NAME}` references);
    /// * every variable of `env` whose value is one of the secrets the configuration resolved
    ///   (an API key however it arrived);
    /// * [`DEFAULT_SECRET_ENV`] and `[agent] tool_env_deny`;
    ///
    /// less the names in `[agent] tool_env_allow`.
    pub fn secret_env_names(
        &self,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeSet<String> {
        let secrets = self.secret_values();
        let mut names: BTreeSet<String> = self
            .env_references()
            .map(|(_, var)| var.to_owned())
            .chain(DEFAULT_SECRET_ENV.iter().map(|n| (*n).to_owned()))
            .chain(self.agent.tool_env_deny.iter().cloned())
            .chain(self.a2a.agents.iter().filter_map(|a| a.token_env.clone()))
            .collect();
        names.extend(
            env.into_iter()
                .filter(|(_, value)| secrets.contains(value))
                .map(|(name, _)| name),
        );
        for allowed in &self.agent.tool_env_allow {
            names.remove(allowed);
        }
        names
    }

    /// The files holding this configuration's secrets (`config.toml`, `mcp.json`), which the
    /// file tools refuse to open; empty for a configuration built in code.
    #[must_use]
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        if !matches!(self.source.origin, crate::ConfigOrigin::Inline) {
            files.push(self.source.path.clone());
        }
        files.extend(self.mcp_path.clone());
        files
    }
}
