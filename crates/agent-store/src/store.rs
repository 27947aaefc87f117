//! [`Store`]: the database — a SQLite file or a PostgreSQL server — opened and migrated.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::batches::Batches;
use crate::db::{Dialect, Pool, Tx};
use crate::error::StoreError;
use crate::notify::{Listener, StoreNotice};
use tokio::sync::broadcast;

/// How many times a migration that lost a race with another process is tried again.
const MIGRATION_ATTEMPTS: u32 = 5;

/// Brings the schema up to date. SQLite has no lock for migrations: two processes opening a new
/// database at once both see a migration as not applied, and the second one's transaction fails
/// (the table exists) and is rolled back whole; it is tried again, and then finds the migration
/// applied. (sqlx takes an advisory lock on PostgreSQL: there the second waits.)
async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let migrator = crate::migrations::migrator(pool.dialect()).await?;
    let mut attempt = 1;
    loop {
        let done = match pool {
            Pool::Sqlite(pool) => migrator.run(pool).await,
            Pool::Postgres(pool) => migrator.run(pool).await,
        };
        match done {
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

/// Connections of a file store's pool (SQLite has one writer at a time; readers run beside it
/// in WAL mode). Batches have one more of their own (`Store::batches`).
const MAX_CONNECTIONS: u32 = 4;

/// Connections to a PostgreSQL store.
const PG_MAX_CONNECTIONS: u32 = 8;

/// How long a PostgreSQL store waits for a connection (the server down or every connection
/// busy) before giving up.
const PG_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// The session store: a database of sessions, runs, events and memory — a SQLite file
/// ([`Store::open`]) or a PostgreSQL database several processes share ([`Store::connect`]).
/// Cheap to clone (clones share its connections).
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    /// Where batches ([`SessionWriter`](crate::SessionWriter), memory) are written: for a
    /// file, one connection of its own, opened at the first batch, so that the scripts it
    /// keeps prepared (their text is the batch's shape) are found again at the next batch
    /// instead of on whichever pool connection comes next (the pool hands them out in turn:
    /// each shape was prepared on each of them), and held by the store rather than a pool
    /// (see `batches.rs`). SQLite writes one transaction at a time anyway. In memory and on
    /// PostgreSQL, `pool` itself.
    pub(crate) batches: Batches,
    path: Option<PathBuf>,
    /// Where the notices of other processes' events go, once someone listens (PostgreSQL).
    notices: Arc<Listener>,
    /// Whether the task renewing this process's leases runs (a shared store).
    pub(crate) renewing: Arc<std::sync::atomic::AtomicBool>,
}

/// Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`).
fn is_postgres_url(url: &str) -> bool {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    matches!(scheme, Some(s) if s.eq_ignore_ascii_case("postgres") || s.eq_ignore_ascii_case("postgresql"))
}

/// `url` with its password, if any, replaced by `***` (for messages and logs).
#[must_use]
pub fn redacted_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some((scheme, rest)) = url.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if let Some((user_info, host)) = authority.rsplit_once('@')
            && let Some((user, _)) = user_info.split_once(':')
        {
            out = format!("{scheme}://{user}:***@{host}{tail}");
        }
    }
    // A password given as a parameter (`?password=…`) is hidden too.
    if let Some(at) = out.find("password=") {
        let start = at + "password=".len();
        let end = out[start..].find('&').map_or(out.len(), |end| start + end);
        out.replace_range(start..end, "***");
    }
    out
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
        let pool = connect(options.clone()).await?;
        Self::ready(Pool::Sqlite(pool), Batches::line(options), Some(path)).await
    }

    /// Opens the store named by `url`: a PostgreSQL database (`postgres://user:password@host:port/database`,
    /// the libpq URL; the database must exist, the schema is created or brought up to date), or
    /// a SQLite file (`sqlite://path`, or a plain path: [`Store::open`]). Several processes — on
    /// one machine or several — may share a PostgreSQL store. The connection is not encrypted
    /// (this build has no TLS): keep the server on a private network or on loopback.
    ///
    /// # Errors
    ///
    /// The server cannot be reached or refuses the user, the URL is not valid, or the schema
    /// cannot be migrated; for a file, as [`Store::open`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        if !is_postgres_url(url) {
            let path = url.strip_prefix("sqlite://").unwrap_or(url);
            return Self::open(path).await;
        }
        let options = PgConnectOptions::from_str(url).map_err(|error| StoreError::Url {
            url: redacted_url(url),
            reason: error.to_string(),
        })?;
        // One connection first, so that a server that cannot be reached or refuses the user is
        // reported at once in its own words (the pool would try again until its timeout).
        PgConnection::connect_with(&options).await?.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(PG_MAX_CONNECTIONS)
            .acquire_timeout(PG_ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await?;
        let batches = Batches::Pool(Pool::Postgres(pool.clone()));
        Self::ready(Pool::Postgres(pool), batches, None).await
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
        let batches = Batches::Pool(Pool::Sqlite(pool.clone()));
        Self::ready(Pool::Sqlite(pool), batches, None).await
    }

    async fn ready(
        pool: Pool,
        batches: Batches,
        path: Option<PathBuf>,
    ) -> Result<Self, StoreError> {
        migrate(&pool).await?;
        let store = Self {
            pool,
            batches,
            path,
            notices: Arc::default(),
            renewing: Arc::default(),
        };
        store.mark_interrupted_runs().await?;
        Ok(store)
    }

    /// The database file (`None` in memory and on PostgreSQL).
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the store is a PostgreSQL database (which several processes may share).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        self.pool.dialect() == Dialect::Postgres
    }

    /// Closes every connection (waiting for the ones in use).
    pub async fn close(&self) {
        self.batches.close().await;
        self.pool.close().await;
    }

    /// A write transaction. SQLite's is taken at once (`BEGIN IMMEDIATE`), so that it waits for
    /// another writer (the busy timeout) instead of failing when it first writes.
    pub(crate) async fn write(&self) -> Result<Tx, StoreError> {
        Ok(self.pool.begin().await?)
    }

    /// The SQL the database speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        self.pool.dialect()
    }

    /// Asks whichever process sharing this PostgreSQL store runs `session` to cancel its run
    /// (the notice [`StoreNotice::Cancel`]); false on SQLite, where no other process is asked.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn ask_cancel(&self, session: &str) -> Result<bool, StoreError> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(false),
            Pool::Postgres(pool) => crate::notify::ask_cancel(pool, session).await,
        }
    }

    /// The notices of events stored by every process sharing this PostgreSQL store (`None`
    /// on SQLite), this one's included. The first call opens a connection that listens (it is
    /// listening when the call returns) and keeps it until the store is closed; every call
    /// subscribes to it.
    ///
    /// # Errors
    ///
    /// The listening connection cannot be opened.
    pub async fn notifications(
        &self,
    ) -> Result<Option<broadcast::Receiver<StoreNotice>>, StoreError> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(None),
            Pool::Postgres(pool) => Ok(Some(self.notices.subscribe(pool).await?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_told_and_shown_without_its_password() {
        assert!(is_postgres_url("postgres://u@h/d"));
        assert!(is_postgres_url("PostgreSQL://u@h/d"));
        assert!(!is_postgres_url("sqlite://s.db"));
        assert!(!is_postgres_url("/var/lib/s.db"));
        assert_eq!(
            redacted_url("postgres://me:s3cret@db:5432/x?sslmode=disable"),
            "postgres://me:***@db:5432/x?sslmode=disable"
        );
        assert_eq!(
            redacted_url("postgres://me@db/x?password=s3cret&application_name=a"),
            "postgres://me@db/x?password=***&application_name=a"
        );
        assert_eq!(redacted_url("postgres://db/x"), "postgres://db/x");
        assert_eq!(
            redacted_url("postgres://db/x?password=s3cret"),
            "postgres://db/x?password=***"
        );
        assert_eq!(redacted_url("not a url"), "not a url");
    }
}
