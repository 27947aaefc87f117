//! [`Pool`]: the database a store is kept in — a SQLite file or a PostgreSQL server — and the
//! few ways the store's code speaks to it: a statement with its arguments ([`Query`]), a row
//! read back ([`Row`]), a transaction ([`Tx`]).
//!
//! The SQL is written once, with `?` for its arguments (SQLite's form); PostgreSQL gets the same
//! text with `$1`, `$2`, … ([`numbered`]). Where the two dialects differ, [`Dialect`] says how.
//! Arguments are owned values ([`Arg`]), so a statement can be built, kept and sent to either.

use std::borrow::Cow;

use sqlx::postgres::{PgArguments, PgPool, PgRow, Postgres};
use sqlx::sqlite::{SqliteArguments, SqlitePool, SqliteRow};
use sqlx::{Arguments, Decode, Row as _, Sqlite, Transaction, Type};

/// Which SQL a database speaks, where the store's statements differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// SQL for a session's new `updated_at`: now (its one `?`), or just after the latest
    /// session's if that is not earlier, so that the session touched last is the latest even
    /// when two changes fall in the same millisecond (`latest_session`, `list_sessions`).
    pub(crate) fn touched(self) -> &'static str {
        match self {
            Self::Sqlite => "MAX(?, (SELECT COALESCE(MAX(updated_at), 0) + 1 FROM sessions))",
            Self::Postgres => {
                "GREATEST(?, (SELECT COALESCE(MAX(updated_at), 0) + 1 FROM sessions))"
            }
        }
    }

    /// The order of sessions, the most recently changed first (ties: the newest row first).
    pub(crate) fn newest_sessions_first(self) -> &'static str {
        match self {
            Self::Sqlite => "updated_at DESC, rowid DESC",
            Self::Postgres => "updated_at DESC, created_at DESC, id DESC",
        }
    }
}

/// A statement's argument, owned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
    Bytes(Vec<u8>),
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Self::Int(Some(value))
    }
}

impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Self {
        Self::Int(value)
    }
}

impl From<Option<f64>> for Arg {
    fn from(value: Option<f64>) -> Self {
        Self::Real(value)
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Self::Text(Some(value))
    }
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Self::Text(Some(value.to_owned()))
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Self::Text(Some(value.clone()))
    }
}

impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Self {
        Self::Text(value)
    }
}

impl From<Option<&str>> for Arg {
    fn from(value: Option<&str>) -> Self {
        Self::Text(value.map(str::to_owned))
    }
}

impl From<&Option<String>> for Arg {
    fn from(value: &Option<String>) -> Self {
        Self::Text(value.clone())
    }
}

impl From<Vec<u8>> for Arg {
    fn from(value: Vec<u8>) -> Self {
        Self::Bytes(value)
    }
}

/// A statement (its arguments written `?`) and its arguments.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    sql: Cow<'static, str>,
    args: Vec<Arg>,
}

/// The statement `sql`, with no argument yet.
pub(crate) fn query(sql: impl Into<Cow<'static, str>>) -> Query {
    Query {
        sql: sql.into(),
        args: Vec::new(),
    }
}

impl Query {
    /// Adds the next argument.
    #[must_use]
    pub(crate) fn bind(mut self, value: impl Into<Arg>) -> Self {
        self.args.push(value.into());
        self
    }
}

/// `sql` with its `?` numbered `$1`, `$2`, … (PostgreSQL's form); a `?` inside a quoted
/// literal or name is left alone.
pub(crate) fn numbered(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut next = 1;
    let mut quote = None;
    for c in sql.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (None, '?') => {
                out.push('$');
                out.push_str(&next.to_string());
                next += 1;
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn encode_error(error: sqlx::error::BoxDynError) -> sqlx::Error {
    sqlx::Error::Encode(error)
}

/// The arguments as SQLite takes them.
pub(crate) fn sqlite_args(args: Vec<Arg>) -> Result<SqliteArguments<'static>, sqlx::Error> {
    let mut out = SqliteArguments::default();
    for arg in args {
        match arg {
            Arg::Int(value) => out.add(value),
            Arg::Real(value) => out.add(value),
            Arg::Text(value) => out.add(value),
            Arg::Bytes(value) => out.add(value),
        }
        .map_err(encode_error)?;
    }
    Ok(out)
}

/// The arguments as PostgreSQL takes them. Its text cannot hold NUL: a NUL in a plain text
/// column (a task, an answer, a title) is stored as U+FFFD. (JSON columns never hold one: JSON
/// writes it `\u0000`.)
pub(crate) fn pg_args(args: Vec<Arg>) -> Result<PgArguments, sqlx::Error> {
    let mut out = PgArguments::default();
    for arg in args {
        match arg {
            Arg::Int(value) => out.add(value),
            Arg::Real(value) => out.add(value),
            Arg::Text(value) => out.add(value.map(|text| {
                if text.contains('\0') {
                    text.replace('\0', "\u{fffd}")
                } else {
                    text
                }
            })),
            Arg::Bytes(value) => out.add(value),
        }
        .map_err(encode_error)?;
    }
    Ok(out)
}

/// A value a column of either database can be read as.
pub(crate) trait Column:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

impl<T> Column for T where
    T: for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

/// A row read back.
pub(crate) enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// The value of `column`.
    pub(crate) fn get<T: Column>(&self, column: &str) -> Result<T, sqlx::Error> {
        match self {
            Self::Sqlite(row) => row.try_get(column),
            Self::Postgres(row) => row.try_get(column),
        }
    }

    /// The value of the first column.
    pub(crate) fn first<T: Column>(&self) -> Result<T, sqlx::Error> {
        match self {
            Self::Sqlite(row) => row.try_get(0),
            Self::Postgres(row) => row.try_get(0),
        }
    }

    /// The text of `column`, borrowed.
    pub(crate) fn str(&self, column: &str) -> Result<&str, sqlx::Error> {
        match self {
            Self::Sqlite(row) => row.try_get(column),
            Self::Postgres(row) => row.try_get(column),
        }
    }
}

/// Runs one statement on a SQLite executor (a pool or a transaction's connection).
async fn sqlite_fetch<'c, E>(executor: E, query: Query) -> Result<Vec<Row>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = Sqlite>,
{
    let args = sqlite_args(query.args)?;
    let rows = sqlx::query_with(&query.sql, args)
        .fetch_all(executor)
        .await?;
    Ok(rows.into_iter().map(Row::Sqlite).collect())
}

async fn sqlite_execute<'c, E>(executor: E, query: Query) -> Result<u64, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = Sqlite>,
{
    let args = sqlite_args(query.args)?;
    let done = sqlx::query_with(&query.sql, args).execute(executor).await?;
    Ok(done.rows_affected())
}

async fn pg_fetch<'c, E>(executor: E, query: Query) -> Result<Vec<Row>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = Postgres>,
{
    let args = pg_args(query.args)?;
    let rows = sqlx::query_with(&numbered(&query.sql), args)
        .fetch_all(executor)
        .await?;
    Ok(rows.into_iter().map(Row::Postgres).collect())
}

async fn pg_execute<'c, E>(executor: E, query: Query) -> Result<u64, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = Postgres>,
{
    let args = pg_args(query.args)?;
    let done = sqlx::query_with(&numbered(&query.sql), args)
        .execute(executor)
        .await?;
    Ok(done.rows_affected())
}

/// The first column of the first row of `rows`.
fn scalar_of<T: Column>(rows: &[Row]) -> Result<T, sqlx::Error> {
    rows.first().ok_or(sqlx::Error::RowNotFound)?.first()
}

/// The database of a store.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Pool {
    /// The SQL it speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Self::Sqlite(_) => Dialect::Sqlite,
            Self::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `query`; returns how many rows it changed.
    pub(crate) async fn execute(&self, query: Query) -> Result<u64, sqlx::Error> {
        match self {
            Self::Sqlite(pool) => sqlite_execute(pool, query).await,
            Self::Postgres(pool) => pg_execute(pool, query).await,
        }
    }

    /// Runs `query`; returns every row.
    pub(crate) async fn fetch_all(&self, query: Query) -> Result<Vec<Row>, sqlx::Error> {
        match self {
            Self::Sqlite(pool) => sqlite_fetch(pool, query).await,
            Self::Postgres(pool) => pg_fetch(pool, query).await,
        }
    }

    /// Runs `query`; returns its first row, if any.
    pub(crate) async fn fetch_optional(&self, query: Query) -> Result<Option<Row>, sqlx::Error> {
        Ok(self.fetch_all(query).await?.into_iter().next())
    }

    /// Runs `query`; returns the first column of its first row.
    pub(crate) async fn scalar<T: Column>(&self, query: Query) -> Result<T, sqlx::Error> {
        scalar_of(&self.fetch_all(query).await?)
    }

    /// A write transaction. SQLite's is taken at once (`BEGIN IMMEDIATE`), so that it waits for
    /// another writer (the busy timeout) instead of failing when it first writes.
    pub(crate) async fn begin(&self) -> Result<Tx, sqlx::Error> {
        Ok(match self {
            Self::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Self::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// Closes every connection (waiting for the ones in use).
    pub(crate) async fn close(&self) {
        match self {
            Self::Sqlite(pool) => pool.close().await,
            Self::Postgres(pool) => pool.close().await,
        }
    }
}

/// A transaction: rolled back when dropped before [`Tx::commit`].
pub(crate) enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    /// Runs `query`; returns how many rows it changed.
    pub(crate) async fn execute(&mut self, query: Query) -> Result<u64, sqlx::Error> {
        match self {
            Self::Sqlite(tx) => sqlite_execute(&mut **tx, query).await,
            Self::Postgres(tx) => pg_execute(&mut **tx, query).await,
        }
    }

    /// Runs `query`; returns every row.
    pub(crate) async fn fetch_all(&mut self, query: Query) -> Result<Vec<Row>, sqlx::Error> {
        match self {
            Self::Sqlite(tx) => sqlite_fetch(&mut **tx, query).await,
            Self::Postgres(tx) => pg_fetch(&mut **tx, query).await,
        }
    }

    /// Runs `query`; returns the first column of its first row, if it has one.
    pub(crate) async fn scalar_optional<T: Column>(
        &mut self,
        query: Query,
    ) -> Result<Option<T>, sqlx::Error> {
        match self.fetch_all(query).await?.first() {
            Some(row) => Ok(Some(row.first()?)),
            None => Ok(None),
        }
    }

    /// Runs `query`; returns the first column of its first row.
    pub(crate) async fn scalar<T: Column>(&mut self, query: Query) -> Result<T, sqlx::Error> {
        scalar_of(&self.fetch_all(query).await?)
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Self::Sqlite(tx) => tx.commit().await,
            Self::Postgres(tx) => tx.commit().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_are_numbered_outside_quotes() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ? AND c LIKE '?%' AND d IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c LIKE '?%' AND d IN ($2, $3)"
        );
        assert!(matches!(numbered("SELECT 1"), Cow::Borrowed("SELECT 1")));
    }
}
