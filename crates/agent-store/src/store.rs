//! [`Store`]: the SQLite database, opened and migrated.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use crate::error::StoreError;

/// How many times a migration that lost a race with another process is tried again.
const MIGRATION_ATTEMPTS: u32 = 5;

/// Brings the schema up to date. SQLite has no lock for migrations: two processes opening a new
/// database at once both see a migration as not applied, and the second one's transaction fails
/// (the table exists) and is rolled back whole; it is tried again, and then finds the migration
/// applied.
async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut attempt = 1;
    loop {
        match crate::migrations::migrator().await?.run(pool).await {
            Ok(()) => return Ok(()),
            Err(error) if attempt < MIGRATION_ATTEMPTS => {
                tracing::debug!(%error, attempt, "migrating the session store again");
                tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                attempt += 1;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// How many times a connection that found the database locked while it was being set up is
/// tried again.
const CONNECT_ATTEMPTS: u32 = 8;

/// The pool of a file store. Its first connection switches a new database to WAL mode, and
/// SQLite answers "database is locked" at once, without the busy timeout, to a connection that
/// does so while another process is setting the same file up: two `openmanus` started together
/// on a new store. Such a connection is tried again after a short wait.
async fn connect(options: SqliteConnectOptions) -> Result<SqlitePool, sqlx::Error> {
    let mut attempt = 1;
    loop {
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            // A local file: a connection cannot go stale the way a network one can, so no
            // round trip to ping it on every acquire.
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await;
        match pool {
            Err(error) if attempt < CONNECT_ATTEMPTS && is_busy(&error) => {
                tracing::debug!(%error, attempt, "opening the session store again");
                tokio::time::sleep(Duration::from_millis(25 * u64::from(attempt))).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Whether SQLite answered `SQLITE_BUSY` (or one of its extended codes).
fn is_busy(error: &sqlx::Error) -> bool {
    const SQLITE_BUSY: i32 = 5;
    match error {
        sqlx::Error::Database(error) => error
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == SQLITE_BUSY),
        _ => false,
    }
}

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections of a file store (SQLite has one writer at a time; readers run beside it in WAL
/// mode).
const MAX_CONNECTIONS: u32 = 4;

/// The session store: a SQLite database of sessions, runs, events and memory. Cheap to clone
/// (clones share one pool of connections).
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: SqlitePool,
    path: Option<PathBuf>,
}

impl Store {
    /// Opens (creating it and its directory if needed) the database at `path` in WAL mode, with
    /// foreign keys on and a busy timeout, brings its schema up to date, and marks the runs
    /// whose process has died as interrupted ([`Store::mark_interrupted_runs`]).
    ///
    /// # Errors
    ///
    /// The directory or the file cannot be created, the file is no SQLite database, or the
    /// schema cannot be migrated.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // In WAL mode a commit survives the process being killed; only a power cut can
            // lose the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool = connect(options).await?;
        Self::ready(pool, Some(path)).await
    }

    /// A store in memory, gone when the last clone is dropped (for tests).
    ///
    /// # Errors
    ///
    /// SQLite cannot start, or the schema cannot be created.
    pub async fn open_memory() -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // Every connection to `:memory:` is a database of its own: keep exactly one, forever.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        Self::ready(pool, None).await
    }

    async fn ready(pool: SqlitePool, path: Option<PathBuf>) -> Result<Self, StoreError> {
        migrate(&pool).await?;
        let store = Self { pool, path };
        store.mark_interrupted_runs().await?;
        Ok(store)
    }

    /// The database file (`None` in memory).
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Closes every connection (waiting for the ones in use).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// A write transaction, taken at once (`BEGIN IMMEDIATE`), so that it waits for another
    /// writer (the busy timeout) instead of failing when it first writes.
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }
}
