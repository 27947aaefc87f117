//! [`Config`]: a parsed configuration, its LLM profiles and sections. Loading it from a file
//! is the loader's work (`loader.rs`); this module only builds it from text (and the overrides).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::llm_settings::LlmSettings;

use crate::document::Document;
use crate::env::Env;
use crate::error::ConfigError;
use crate::llm::{self, LlmProfiles};
use crate::llm_settings::VISION;
use crate::overrides::ConfigOverride;
use crate::permissions::PermissionsSettings;
use crate::sections::{
    A2aSettings, AgentSettings, BrowserSettings, DaytonaSettings, McpSettings, NatsSettings,
    RunflowSettings, SandboxSettings, SearchSettings, Sections, ServerSettings, TelemetrySettings,
};
use crate::source::{ConfigOrigin, ConfigSource};
use crate::store::StoreSettings;

/// The string keys of an LLM section whose environment source `describe_llm` reports.
const ENV_FIELDS: [&str; 5] = ["model", "base_url", "api_key", "api_version", "deployment"];

/// Keys accepted so that OpenManus's files load, which openmanus-rs does not use: the key and
/// why it does nothing.
const INERT_KEYS: [(&[&str], &str); 2] = [
    (
        &["daytona"],
        "openmanus-rs has no Daytona sandbox; sandboxed agents use [sandbox]",
    ),
    (
        &["mcp", "server_reference"],
        "OpenManus's Python module for its MCP server; openmanus-rs serves its tools with \
         `openmanus mcp-server`",
    ),
];

/// A loaded configuration. The LLM profiles are reached through methods (they have lookup
/// rules); the other sections are plain public fields, at their defaults when the file does not
/// set them.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) source: ConfigSource,
    pub(crate) mcp_path: Option<PathBuf>,
    llm: LlmProfiles,
    env_refs: Vec<(String, String)>,
    inert: Vec<(String, &'static str)>,
    /// `[browser]` (and `[browser.proxy]`).
    pub browser: BrowserSettings,
    /// `[search]`.
    pub search: SearchSettings,
    /// `[sandbox]`.
    pub sandbox: SandboxSettings,
    /// `[daytona]`, when the file has that section.
    pub daytona: Option<DaytonaSettings>,
    /// `[mcp]`, with the servers of `mcp.json`.
    pub mcp: McpSettings,
    /// `[runflow]`.
    pub runflow: RunflowSettings,
    /// `[agent]`.
    pub agent: AgentSettings,
    /// `[store]`.
    pub store: StoreSettings,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[nats]`.
    pub nats: NatsSettings,
    /// `[a2a]`.
    pub a2a: A2aSettings,
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[permissions]`.
    pub permissions: PermissionsSettings,
}

impl Config {
    /// A configuration with `default_llm` as `[llm]` and every other section at its defaults
    /// (for programs and tests that build their configuration in code).
    #[must_use]
    pub fn new(default_llm: LlmSettings) -> Self {
        Self {
            source: ConfigSource {
                path: PathBuf::from("<code>"),
                origin: ConfigOrigin::Inline,
            },
            mcp_path: None,
            env_refs: Vec::new(),
            inert: Vec::new(),
            llm: LlmProfiles {
                default: default_llm,
                named: BTreeMap::new(),
                own_keys: BTreeMap::new(),
                spelled: BTreeMap::new(),
            },
            browser: BrowserSettings::default(),
            search: SearchSettings::default(),
            sandbox: SandboxSettings::default(),
            daytona: None,
            mcp: McpSettings::default(),
            runflow: RunflowSettings::default(),
            agent: AgentSettings::default(),
            store: StoreSettings::default(),
            server: ServerSettings::default(),
            nats: NatsSettings::default(),
            a2a: A2aSettings::default(),
            telemetry: TelemetrySettings::default(),
            permissions: PermissionsSettings::default(),
        }
    }

    /// Adds (or replaces) the named profile `[llm.<name>]` (`name` is lower-cased). The
    /// settings are used as given: no merging with the default happens here.
    #[must_use]
    pub fn with_llm_profile(mut self, name: &str, settings: LlmSettings) -> Self {
        let lower = name.to_lowercase();
        self.llm.own_keys.remove(&lower);
        self.llm.spelled.insert(lower.clone(), name.to_owned());
        self.llm.named.insert(lower, settings);
        self
    }

    /// Builds the configuration from `text` with `overrides` written into its parsed tree.
    pub(crate) fn parse(
        text: &str,
        source: ConfigSource,
        env: &Env,
        overrides: &[ConfigOverride],
    ) -> Result<Self, ConfigError> {
        let path = source.path.clone();
        let mut doc = Document::parse(text, &path, env, overrides)?;
        let inert = INERT_KEYS
            .iter()
            .filter(|(key, _)| doc.has(key))
            .map(|(key, why)| (key.join("."), *why))
            .collect();
        let llm_entry = doc.take("llm");
        let llm = llm::build(&doc, llm_entry)?;
        let sections: Sections = doc.deserialize_rest()?;
        Ok(Self {
            source,
            mcp_path: None,
            env_refs: std::mem::take(&mut doc.env_refs),
            inert,
            llm,
            browser: sections.browser,
            search: sections.search,
            sandbox: sections.sandbox,
            daytona: sections.daytona,
            mcp: sections.mcp,
            runflow: sections.runflow,
            agent: sections.agent,
            store: sections.store,
            server: sections.server,
            nats: sections.nats,
            a2a: sections.a2a,
            telemetry: sections.telemetry,
            permissions: sections.permissions,
        })
    }

    /// The file this configuration came from, and how it was chosen.
    #[must_use]
    pub fn source(&self) -> &ConfigSource {
        &self.source
    }

    /// The `mcp.json` that was looked for (beside the configuration file), whether or not it
    /// exists; `None` for configurations not loaded from a file.
    #[must_use]
    pub fn mcp_path(&self) -> Option<&Path> {
        self.mcp_path.as_deref()
    }

    /// Every value of `config.toml` read from the environment: `(dotted key, variable)`, in
    /// file order (e.g. `("llm.api_key", "OPENAI_API_KEY")`).
    pub fn env_references(&self) -> impl Iterator<Item = (&str, &str)> {
        self.env_refs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The keys the file sets that do nothing in openmanus-rs (`daytona`,
    /// `mcp.server_reference`: accepted so that OpenManus's files load), each with the reason;
    /// `openmanus config check` warns about them.
    pub fn inert_keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.inert.iter().map(|(k, why)| (k.as_str(), *why))
    }

    /// The default LLM: `[llm]` (or `[llm.default]` when there is one, as in OpenManus).
    #[must_use]
    pub fn default_llm(&self) -> &LlmSettings {
        self.llm.get("default")
    }

    /// The LLM for an agent or purpose: `[llm.<name>]` (matched case-insensitively, so agent
    /// `Manus` uses `[llm.manus]`) merged over `[llm]`, or `[llm]` itself when there is no such
    /// section.
    #[must_use]
    pub fn llm_for(&self, name: &str) -> &LlmSettings {
        self.llm.get(name)
    }

    /// The named profile `[llm.<name>]`, if the file has one (no fallback).
    #[must_use]
    pub fn llm_profile(&self, name: &str) -> Option<&LlmSettings> {
        self.llm.named.get(&name.to_lowercase())
    }

    /// The names of the `[llm.<name>]` sections, lower-cased, sorted.
    pub fn llm_profile_names(&self) -> impl Iterator<Item = &str> {
        self.llm.named.keys().map(String::as_str)
    }

    /// The LLM for image work: `[llm.vision]` (with `supports_images = true` unless that section
    /// says otherwise), or `[llm]` when there is no such section.
    #[must_use]
    pub fn vision_llm(&self) -> &LlmSettings {
        self.llm.get(VISION)
    }

    /// The effective LLM settings for `name` as TOML, with the API key redacted, under a
    /// comment saying where they came from — what `openmanus config check` prints.
    #[must_use]
    pub fn describe_llm(&self, name: &str) -> String {
        let lower = name.to_lowercase();
        // The profile actually used: its own section, else [llm.default], else [llm].
        let effective = if self.llm.named.contains_key(&lower) {
            Some(lower.as_str())
        } else if self.llm.named.contains_key("default") {
            Some("default")
        } else {
            None
        };
        let mut origin = match effective {
            Some(section) => format!("[llm.{section}] over [llm]"),
            None => "[llm]".to_owned(),
        };
        if effective != Some(lower.as_str()) && lower != "default" {
            let _ = write!(origin, " (there is no [llm.{lower}] section)");
        }
        let mut out = format!("# LLM settings for `{lower}`: {origin}\n");
        for field in ENV_FIELDS {
            let key = self.llm.key_path(effective.unwrap_or("default"), field);
            if let Some((_, var)) = self.env_refs.iter().find(|(k, _)| *k == key) {
                let _ = writeln!(out, "# {field} is read from the environment variable {var}");
            }
        }
        match toml::to_string(self.llm.get(&lower)) {
            Ok(body) => out.push_str(&body),
            Err(e) => {
                let _ = writeln!(out, "# cannot render the settings: {e}");
            }
        }
        out
    }

    /// [`Config::describe_llm`] for the default and every named profile, separated by blank
    /// lines.
    #[must_use]
    pub fn describe_llms(&self) -> String {
        std::iter::once("default")
            .chain(self.llm_profile_names().filter(|n| *n != "default"))
            .map(|name| self.describe_llm(name))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The workspace directory (`[agent] workspace_root`, default `workspace`); a relative path
    /// is relative to the current directory of the process.
    #[must_use]
    pub fn workspace_root(&self) -> &Path {
        &self.agent.workspace_root
    }
}
