//! [`Batches`]: where a store writes its batches ([`Script::run`](crate::script::Script)).
//!
//! A file store writes them on one connection of its own, opened at the first batch and kept:
//! the scripts it keeps prepared (their text is the batch's shape) are found again at the next
//! batch, and SQLite writes one transaction at a time anyway. It is held here rather than in a
//! pool of one: a pool hands a released connection back from a task of its own that first
//! pings it (a trip to SQLite's thread and back, two thread wake-ups, at every batch).

use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection as _, Sqlite};
use tokio::sync::{Mutex, MutexGuard};

use crate::db::Pool;

/// Where a store writes its batches.
#[derive(Debug, Clone)]
pub(crate) enum Batches {
    /// A file store: one connection of its own.
    Line(Arc<Line>),
    /// In memory (its one connection is its database) and on PostgreSQL: the store's pool.
    Pool(Pool),
}

/// A file store's connection for batches: opened at the first batch, kept until the store
/// closes, and opened again after one was given up (a batch cancelled half-way).
#[derive(Debug)]
pub(crate) struct Line {
    options: SqliteConnectOptions,
    connection: Mutex<Option<SqliteConnection>>,
}

impl Batches {
    /// A file store's: a connection with `options`, opened when first needed.
    pub(crate) fn line(options: SqliteConnectOptions) -> Self {
        Self::Line(Arc::new(Line {
            options,
            connection: Mutex::new(None),
        }))
    }

    /// Closes its connection (a pool: every connection, waiting for the ones in use).
    pub(crate) async fn close(&self) {
        match self {
            Self::Line(line) => {
                if let Some(connection) = line.connection.lock().await.take()
                    && let Err(error) = connection.close().await
                {
                    tracing::debug!(%error, "closing the batch connection");
                }
            }
            Self::Pool(pool) => pool.close().await,
        }
    }
}

impl Line {
    /// The connection, opened if need be; other batches wait until it is dropped.
    pub(crate) async fn hold(&self) -> Result<Held<'_>, sqlx::Error> {
        let mut guard = self.connection.lock().await;
        if guard.is_none() {
            *guard = Some(SqliteConnection::connect_with(&self.options).await?);
        }
        Ok(Held::Line(guard))
    }
}

/// A SQLite connection a batch is written on.
pub(crate) enum Held<'a> {
    /// From the store's pool.
    Pooled(PoolConnection<Sqlite>),
    /// A file store's connection for batches.
    Line(MutexGuard<'a, Option<SqliteConnection>>),
}

impl Held<'_> {
    /// The connection (`None` only once given up).
    pub(crate) fn connection(&mut self) -> Option<&mut SqliteConnection> {
        match self {
            Self::Pooled(connection) => Some(&mut **connection),
            Self::Line(guard) => guard.as_mut(),
        }
    }

    /// Closes the connection rather than writing on it again: a batch may have been left
    /// half-way on it.
    pub(crate) fn give_up(&mut self) {
        match self {
            Self::Pooled(connection) => connection.close_on_drop(),
            // Dropped: sqlx's thread for it closes the database handle, and SQLite rolls back
            // a transaction left open.
            Self::Line(guard) => drop(guard.take()),
        }
    }
}
