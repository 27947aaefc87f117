//! Finding and loading `config.toml`: the lookup order, the environment, `mcp.json` beside the
//! file; and [`Config`]'s constructors that load.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::env::Env;
use crate::error::ConfigError;
use crate::mcp;
use crate::overrides::ConfigOverride;
use crate::source::{CONFIG_ENV, ConfigOrigin, ConfigSource};

/// The per-user configuration file under a configuration directory.
const USER_FILE: [&str; 2] = ["openmanus", "config.toml"];

/// Finds and loads the configuration. Lookup order:
///
/// 1. the explicit path ([`ConfigLoader::explicit_path`], the CLI's `--config`);
/// 2. the file named by `OPENMANUS_CONFIG` (unset or empty: skipped);
/// 3. `<base>/config/config.toml`;
/// 4. the per-user file, `$XDG_CONFIG_HOME/openmanus/config.toml` or else
///    `$HOME/.config/openmanus/config.toml` ([`ConfigLoader::user_config_path`]);
/// 5. `<base>/config/config.example.toml` (as OpenManus does; a warning is logged).
///
/// A file named by 1 or 2 must exist (no silent fall-through); relative paths there are taken
/// relative to the base directory. The MCP servers are read from `mcp.json` in the directory of
/// the chosen file (missing: none).
///
/// The environment (for `OPENMANUS_CONFIG`, the per-user directory and `${VAR}` values) is the
/// process's unless [`ConfigLoader::with_env`] replaces it. Overrides
/// ([`ConfigLoader::with_overrides`], the CLI's `-c KEY=VALUE` and `--model`) replace keys of
/// the file before it is validated.
///
/// ```
/// use agent_config::{ConfigLoader, ConfigOrigin};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("config"))?;
/// std::fs::write(
///     dir.path().join("config/config.toml"),
///     "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"https://api.openai.com/v1\"\napi_key = \"${KEY}\"\n",
/// )?;
/// let config = ConfigLoader::new(dir.path())
///     .with_env(|name| (name == "KEY").then(|| "sk-test".to_owned()))
///     .load()?;
/// assert_eq!(config.source().origin, ConfigOrigin::ConfigToml);
/// assert_eq!(config.default_llm().api_key.expose(), "sk-test");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ConfigLoader {
    base_dir: PathBuf,
    explicit: Option<PathBuf>,
    env: Env,
    overrides: Vec<ConfigOverride>,
}

impl ConfigLoader {
    /// A loader that looks under `base_dir` (the CLI passes the current directory).
    pub fn new(base_dir: impl Into<PathBuf>) -> Self {
        Self {
            base_dir: base_dir.into(),
            explicit: None,
            env: Env::process(),
            overrides: Vec::new(),
        }
    }

    /// Replaces keys of the file, in order, before it is validated (the CLI's `-c KEY=VALUE`
    /// and `--model`). An override naming an unknown key, or with a value of the wrong type, is
    /// a [`ConfigError::Override`].
    #[must_use]
    pub fn with_overrides(mut self, overrides: impl IntoIterator<Item = ConfigOverride>) -> Self {
        self.overrides.extend(overrides);
        self
    }

    /// The per-user configuration file: `$XDG_CONFIG_HOME/openmanus/config.toml` when that
    /// variable is set to an absolute path, else `$HOME/.config/openmanus/config.toml`; `None`
    /// without either.
    #[must_use]
    pub fn user_config_path(&self) -> Option<PathBuf> {
        let absolute = |name: &str| {
            self.env
                .get(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let dir =
            absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
        Some(USER_FILE.iter().fold(dir, |path, part| path.join(part)))
    }

    /// Uses this file, when given, before any other (the CLI's `--config`).
    #[must_use]
    pub fn explicit_path(mut self, path: Option<PathBuf>) -> Self {
        self.explicit = path;
        self
    }

    /// Reads environment variables through `lookup` instead of the process environment (for
    /// `OPENMANUS_CONFIG` and every `${VAR}` value).
    #[must_use]
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Env::from_fn(lookup);
        self
    }

    /// The files that would be tried, in order.
    #[must_use]
    pub fn candidates(&self) -> Vec<ConfigSource> {
        if let Some(path) = &self.explicit {
            return vec![ConfigSource {
                path: self.base_dir.join(path),
                origin: ConfigOrigin::Explicit,
            }];
        }
        if let Some(path) = self.env.get(CONFIG_ENV).filter(|p| !p.trim().is_empty()) {
            return vec![ConfigSource {
                path: self.base_dir.join(path),
                origin: ConfigOrigin::EnvVar,
            }];
        }
        let dir = self.base_dir.join("config");
        let mut candidates = vec![ConfigSource {
            path: dir.join("config.toml"),
            origin: ConfigOrigin::ConfigToml,
        }];
        candidates.extend(self.user_config_path().map(|path| ConfigSource {
            path,
            origin: ConfigOrigin::User,
        }));
        candidates.push(ConfigSource {
            path: dir.join("config.example.toml"),
            origin: ConfigOrigin::Example,
        });
        candidates
    }

    /// The file that will be loaded.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Missing`] when the explicit or `OPENMANUS_CONFIG` file does not exist,
    /// [`ConfigError::NotFound`] (listing the paths searched) when neither default file does.
    pub fn locate(&self) -> Result<ConfigSource, ConfigError> {
        let candidates = self.candidates();
        if let Some(found) = candidates.iter().find(|c| c.path.is_file()) {
            return Ok(found.clone());
        }
        match candidates.as_slice() {
            [single] if single.origin != ConfigOrigin::ConfigToml => Err(ConfigError::Missing {
                path: single.path.clone(),
                origin: single.origin,
            }),
            _ => Err(ConfigError::NotFound {
                searched: candidates.into_iter().map(|c| c.path).collect(),
            }),
        }
    }

    /// Finds, reads and validates the configuration, and reads `mcp.json` beside it.
    ///
    /// # Errors
    ///
    /// Any [`ConfigError`]: no file, an unreadable file, invalid TOML, an unknown or mistyped
    /// key, a missing required key, an unset `${VAR}`, or a bad `mcp.json`.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let source = self.locate()?;
        if source.origin == ConfigOrigin::Example {
            tracing::warn!(
                path = %source.path.display(),
                "no config/config.toml; using the example configuration"
            );
        }
        self.load_source(source)
    }

    /// Loads exactly `path` (relative to the base directory), and `mcp.json` beside it.
    ///
    /// # Errors
    ///
    /// As [`ConfigLoader::load`]; a missing file is [`ConfigError::Missing`].
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = self.base_dir.join(path);
        if !path.is_file() {
            return Err(ConfigError::Missing {
                path,
                origin: ConfigOrigin::Explicit,
            });
        }
        self.load_source(ConfigSource {
            path,
            origin: ConfigOrigin::Explicit,
        })
    }

    /// Parses a configuration from a string (no `mcp.json` is read), with this loader's
    /// environment.
    ///
    /// # Errors
    ///
    /// As [`ConfigLoader::load`], with `<string>` as the file name.
    pub fn parse_str(&self, text: &str) -> Result<Config, ConfigError> {
        self.parse(
            text,
            ConfigSource {
                path: PathBuf::from("<string>"),
                origin: ConfigOrigin::Inline,
            },
        )
    }

    /// Parses `text` once, with the overrides written into the parsed tree. Errors about an
    /// override name it; errors about the file keep the file's own lines and columns.
    fn parse(&self, text: &str, source: ConfigSource) -> Result<Config, ConfigError> {
        Config::parse(text, source, &self.env, &self.overrides).map_err(|error| {
            let key = match &error {
                ConfigError::Invalid { key, .. } | ConfigError::EnvVar { key, .. } => {
                    Some(key.clone())
                }
                ConfigError::MissingKey { section, key, .. } => Some(format!("{section}.{key}")),
                _ => None,
            };
            let culprit = key
                .as_deref()
                .and_then(|key| self.overrides.iter().rev().find(|over| over.concerns(key)));
            match culprit {
                Some(over) => ConfigError::Override {
                    text: over.to_string(),
                    message: override_message(&error),
                },
                None => error,
            }
        })
    }

    fn load_source(&self, source: ConfigSource) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(&source.path).map_err(|e| ConfigError::Read {
            path: source.path.clone(),
            source: e,
        })?;
        let mcp_path = source
            .path
            .parent()
            .unwrap_or_else(|| Path::new(""))
            .join("mcp.json");
        let mut config = self.parse(&text, source)?;
        config.mcp.servers = mcp::load_with_env(&mcp_path, &self.env)?;
        config.mcp_path = Some(mcp_path);
        tracing::debug!(source = %config.source, servers = config.mcp.servers.len(), "configuration loaded");
        Ok(config)
    }
}

impl Config {
    /// Finds and loads the configuration under `base_dir` with the process environment:
    /// `explicit` (the CLI's `--config`), then `OPENMANUS_CONFIG`, then
    /// `config/config.toml`, then `config/config.example.toml`. See [`ConfigLoader`].
    ///
    /// # Errors
    ///
    /// Any [`ConfigError`].
    pub fn load(
        base_dir: impl Into<PathBuf>,
        explicit: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        ConfigLoader::new(base_dir)
            .explicit_path(explicit.map(Path::to_path_buf))
            .load()
    }

    /// Loads exactly this file (and `mcp.json` beside it) with the process environment.
    ///
    /// # Errors
    ///
    /// Any [`ConfigError`]; a missing file is [`ConfigError::Missing`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        ConfigLoader::new("").load_file(path)
    }

    /// Parses a configuration from TOML text with the process environment; no `mcp.json` is
    /// read. Messages call the file `<string>`.
    ///
    /// # Errors
    ///
    /// Any [`ConfigError`] about the content.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        ConfigLoader::new("").parse_str(text)
    }
}

/// What an error says about a key, without the file position (an override has none).
fn override_message(error: &ConfigError) -> String {
    match error {
        ConfigError::Invalid { key, message, .. } => format!("`{key}`: {message}"),
        ConfigError::EnvVar { key, var, .. } => {
            format!("`{key}` reads the environment variable `{var}`, which is not set")
        }
        other => other.to_string(),
    }
}
