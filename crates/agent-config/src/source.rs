//! Where a configuration came from: the file and how it was chosen.

use std::fmt;
use std::path::PathBuf;

/// The environment variable naming a configuration file (checked after `--config`).
pub const CONFIG_ENV: &str = "OPENMANUS_CONFIG";

/// How the configuration file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// Named explicitly (the CLI's `--config`).
    Explicit,
    /// Named by the `OPENMANUS_CONFIG` environment variable.
    EnvVar,
    /// Found as `config/config.toml` under the base directory.
    ConfigToml,
    /// Found in the per-user configuration directory:
    /// `$XDG_CONFIG_HOME/openmanus/config.toml`, else `~/.config/openmanus/config.toml`.
    User,
    /// Found as `config/config.example.toml` under the base directory (no `config.toml`).
    Example,
    /// Parsed from a string; there is no file.
    Inline,
}

impl fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Explicit => "--config",
            Self::EnvVar => CONFIG_ENV,
            Self::ConfigToml => "the config directory",
            Self::User => "the per-user configuration directory",
            Self::Example => "the config directory, example fallback",
            Self::Inline => "a string",
        })
    }
}

/// The file a [`Config`](crate::Config) was loaded from, and why that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSource {
    /// The file (for [`ConfigOrigin::Inline`], a placeholder used in messages).
    pub path: PathBuf,
    /// How it was chosen.
    pub origin: ConfigOrigin,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (from {})", self.path.display(), self.origin)
    }
}
