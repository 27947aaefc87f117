//! `[store]`: where sessions are recorded — a SQLite file or a PostgreSQL database.

use std::path::PathBuf;

use serde::Deserialize;

use crate::empty::{empty_as_none, empty_path_as_none};

/// `[store]` (openmanus-rs): the session store that records every run (sessions, events,
/// memory) so sessions can be listed, replayed and resumed: a SQLite file (`path`), or a
/// PostgreSQL database several `openmanus` processes share (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "StoreFields")]
pub struct StoreSettings {
    /// Record sessions at all. Default `true`.
    pub enabled: bool,
    /// The database file. Default (`None`, or `""`): `.openmanus/sessions.db` inside the
    /// workspace ([`StoreSettings::database_path`]). A relative path is relative to the process's
    /// current directory, as `workspace_root` is.
    pub path: Option<PathBuf>,
    /// A PostgreSQL database instead of a file: `postgres://user@host:port/database` (the
    /// password in the URL, in `PGPASSWORD` or in `~/.pgpass`). Default `None` (`""`: unset).
    /// Not with `path`.
    pub url: Option<String>,
}

/// `[store]` as written, checked into [`StoreSettings`].
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct StoreFields {
    enabled: bool,
    #[serde(deserialize_with = "empty_path_as_none")]
    path: Option<PathBuf>,
    #[serde(deserialize_with = "empty_as_none")]
    url: Option<String>,
}

impl Default for StoreFields {
    fn default() -> Self {
        let StoreSettings { enabled, path, url } = StoreSettings::default();
        Self { enabled, path, url }
    }
}

impl TryFrom<StoreFields> for StoreSettings {
    type Error = String;

    fn try_from(fields: StoreFields) -> Result<Self, Self::Error> {
        if let Some(url) = &fields.url {
            if fields.path.is_some() {
                return Err("`path` and `url` both name a session store: keep one".to_owned());
            }
            if !StoreSettings::is_postgres_url(url) {
                return Err(
                    "`url` names a PostgreSQL database (postgres://user@host:port/database); \
                     a SQLite file is `path`"
                        .to_owned(),
                );
            }
        }
        Ok(Self {
            enabled: fields.enabled,
            path: fields.path,
            url: fields.url,
        })
    }
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            path: None,
            url: None,
        }
    }
}

impl StoreSettings {
    /// Where the default database lives inside the workspace.
    pub const DEFAULT_FILE: &'static str = ".openmanus/sessions.db";

    /// The database file for a workspace: `path` when set, else
    /// `<workspace>/.openmanus/sessions.db` (not used when `url` is set).
    #[must_use]
    pub fn database_path(&self, workspace: &std::path::Path) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| workspace.join(Self::DEFAULT_FILE))
    }

    /// Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`).
    #[must_use]
    pub fn is_postgres_url(url: &str) -> bool {
        url.split_once("://").is_some_and(|(scheme, _)| {
            scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
        })
    }
}
