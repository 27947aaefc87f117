//! [`Script`]: several statements run as one transaction.
//!
//! On SQLite each call through sqlx is a trip to the connection's worker thread and back (two
//! thread wake-ups), and a pool connection is pinged once more when it is released. A batch
//! written as `BEGIN`, a statement per table and `COMMIT` took five trips; as one script it
//! takes two, whatever it holds (sqlx binds the `?` of successive statements to successive
//! arguments). PostgreSQL takes one statement per call: there the script is a transaction of
//! its statements, one after the other, on one connection.

use sqlx::postgres::PgConnection;

use crate::batches::{Batches, Held};
use crate::db::{Arg, Pool, Tx, numbered, pg_args, sqlite_args};
use crate::error::StoreError;
use crate::types::EventId;

/// Rows of one multi-row `INSERT` (7 columns at most: far below SQLite's 32766 variables and
/// PostgreSQL's 65535).
pub(crate) const ROWS_PER_STATEMENT: usize = 256;

/// Statements and their arguments, run in order by one call.
#[derive(Default)]
pub(crate) struct Script {
    /// The SQLite text: the statements, each `;`-ended, and after an insert whose ids are
    /// wanted a `SELECT last_insert_rowid();` of its own (see [`Script::returning_ids`]).
    sql: String,
    args: Vec<Arg>,
    statements: Vec<Span>,
}

/// Where a statement lies in a [`Script`].
#[derive(Clone, Copy)]
struct Span {
    /// Its text: `sql[start..end]`, without the `;`.
    start: usize,
    end: usize,
    /// The end of its arguments in `args` (they begin where the previous statement's end).
    args_end: usize,
    /// How many rows it inserts whose ids the script returns (0: none).
    ids: usize,
}

impl Script {
    /// Appends a statement (its `?` take the next arguments [`bind`](Self::bind) adds).
    pub(crate) fn statement(&mut self, sql: &str) {
        self.close_statement();
        let start = self.sql.len();
        self.sql.push_str(sql);
        let end = self.sql.len();
        self.sql.push_str(";\n");
        self.statements.push(Span {
            start,
            end,
            args_end: self.args.len(),
            ids: 0,
        });
    }

    /// Marks the last statement, an `INSERT` of `rows` rows into a table whose ids SQLite
    /// assigns, as one whose ids the script returns. On PostgreSQL the statement says
    /// `RETURNING id`. On SQLite it is followed by `SELECT last_insert_rowid()`, the id of
    /// its last row, and the others are the ones below it: SQLite gives each row of an
    /// `INSERT` the table's largest id (of all time, with `AUTOINCREMENT`) plus one, while the
    /// transaction keeps every other writer out. That spares the temporary table a
    /// `RETURNING` clause fills and reads back (~20 k instructions a step of
    /// `process_cost`).
    pub(crate) fn returning_ids(&mut self, rows: usize) {
        if let Some(last) = self.statements.last_mut()
            && rows > 0
        {
            last.ids = rows;
            self.sql.push_str("SELECT last_insert_rowid();\n");
        }
    }

    /// Marks where the statement before the next ends (its arguments are all bound).
    fn close_statement(&mut self) {
        if let Some(last) = self.statements.last_mut() {
            last.args_end = self.args.len();
        }
    }

    /// Adds the next argument.
    pub(crate) fn bind(&mut self, value: impl Into<Arg>) {
        self.args.push(value.into());
    }

    /// How many statements it holds.
    #[cfg(test)]
    pub(crate) fn statements(&self) -> usize {
        self.statements.len()
    }

    /// The statements one by one in PostgreSQL's words (`RETURNING id` where ids are
    /// wanted), each with its arguments.
    fn split(mut self) -> Vec<(String, Vec<Arg>)> {
        self.close_statement();
        let mut out = Vec::with_capacity(self.statements.len());
        let mut args = self.args.into_iter();
        let mut args_at = 0;
        for span in self.statements {
            let mut sql = self
                .sql
                .get(span.start..span.end)
                .unwrap_or_default()
                .to_owned();
            if span.ids > 0 {
                sql.push_str(" RETURNING id");
            }
            out.push((sql, args.by_ref().take(span.args_end - args_at).collect()));
            args_at = span.args_end;
        }
        out
    }

    /// The ids of the rows of the statements marked by [`returning_ids`](Self::returning_ids),
    /// in order, from the last id of each (what its `SELECT last_insert_rowid()` returned).
    fn ids_from_last(&self, lasts: &[EventId]) -> Result<Vec<EventId>, StoreError> {
        let counts = self.statements.iter().map(|s| s.ids).filter(|&n| n > 0);
        if counts.clone().count() != lasts.len() {
            return Err(StoreError::corrupt(
                "insert ids",
                format!("{} last ids for {} inserts", lasts.len(), counts.count()),
            ));
        }
        let mut ids = Vec::with_capacity(counts.clone().sum());
        for (rows, &last) in counts.zip(lasts) {
            let below = i64::try_from(rows - 1).unwrap_or(i64::MAX);
            let first = last.checked_sub(below).ok_or_else(|| {
                StoreError::corrupt("insert ids", format!("last id {last} for {rows} rows"))
            })?;
            ids.extend(first..=last);
        }
        Ok(ids)
    }

    /// Runs the statements inside the caller's transaction.
    pub(crate) async fn execute_in(self, tx: &mut Tx) -> Result<(), StoreError> {
        if self.is_empty() {
            return Ok(());
        }
        match tx {
            Tx::Sqlite(tx) => {
                sqlx::query_with(&self.sql, sqlite_args(self.args)?)
                    .persistent(false)
                    .execute(&mut **tx)
                    .await?;
            }
            Tx::Postgres(tx) => {
                self.run_on_pg(tx).await?;
            }
        }
        Ok(())
    }

    /// Runs the statements in a transaction of `pool` that first locks the row of `session`
    /// and ends with the notice of the events stored (see [`run`](Self::run)).
    async fn run_on_pg_pool(
        self,
        pool: &sqlx::PgPool,
        session: Option<&str>,
    ) -> Result<Vec<EventId>, StoreError> {
        let mut tx = pool.begin().await?;
        if let Some(session) = session {
            lock_session(&mut tx, session).await?;
        }
        let ids = self.run_on_pg(&mut tx).await?;
        if let (Some(session), Some(&last)) = (session, ids.iter().max()) {
            crate::notify::events_stored(&mut tx, session, last).await?;
        }
        tx.commit().await?;
        Ok(ids)
    }

    /// Runs the statements one by one on `conn` (inside its transaction); the first column of
    /// every row they return.
    async fn run_on_pg(self, conn: &mut PgConnection) -> Result<Vec<EventId>, StoreError> {
        let mut ids = Vec::new();
        for (sql, args) in self.split() {
            let returned: Vec<EventId> = sqlx::query_scalar_with(&numbered(&sql), pg_args(args)?)
                .persistent(false)
                .fetch_all(&mut *conn)
                .await?;
            ids.extend(returned);
        }
        Ok(ids)
    }

    /// Whether it holds no statement.
    pub(crate) fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    /// Runs the statements in one transaction (a single statement is one by itself) and
    /// returns the ids of the rows of the inserts marked by
    /// [`returning_ids`](Self::returning_ids): in order on SQLite, in the order PostgreSQL
    /// returns them there. On an error nothing is written: the transaction is rolled back,
    /// and a connection that cannot say it was is closed rather than reused. So is one whose
    /// call was dropped half-way (the caller cancelled): sqlx's thread may have begun the
    /// transaction and not reached the `COMMIT`. (The in-memory store's one connection is its
    /// database: closing it loses the data; that store is for tests.)
    ///
    /// On SQLite a script is kept prepared on its connection (sqlx's statement cache, least
    /// recently used out): its text depends only on the batch's shape (how many rows of each
    /// kind), and with a model that takes longer than the recorder's commit interval every
    /// step is a batch of the same few shapes (its events, its two messages, its exchange), so
    /// SQLite parses and plans each shape once rather than at every step: 1.31 M → 1.20 M
    /// instructions a step in `process_cost` (one commit a step). Shapes that do not repeat
    /// (a replay's or a fast model's steps sharing a commit) cost one cache entry each.
    ///
    /// On PostgreSQL the transaction first locks the row of `session` (when given), so that
    /// the session's events take their ids in the order their transactions commit: a reader
    /// that saw event `n` then never misses one below it committed later; and it ends with the
    /// notice of the events it stored (see `notify`).
    pub(crate) async fn run(
        mut self,
        batches: &Batches,
        session: Option<&str>,
    ) -> Result<Vec<EventId>, StoreError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let held = match batches {
            Batches::Pool(Pool::Postgres(pool)) => return self.run_on_pg_pool(pool, session).await,
            Batches::Pool(Pool::Sqlite(pool)) => Held::Pooled(pool.acquire().await?),
            Batches::Line(line) => line.hold().await?,
        };
        self.close_statement();
        let args = sqlite_args(std::mem::take(&mut self.args))?;
        let mut guard = Unfinished {
            held,
            // A single statement is a transaction by itself: nothing is left open if the
            // caller cancels it.
            finished: self.statements.len() == 1,
        };
        let Some(connection) = guard.held.connection() else {
            return Err(sqlx::Error::PoolClosed.into());
        };
        if self.statements.len() == 1 {
            let lasts = sqlx::query_scalar_with(&self.sql, args)
                .persistent(true)
                .fetch_all(&mut *connection)
                .await?;
            return self.ids_from_last(&lasts);
        }
        // Taken at once (`IMMEDIATE`), so that it waits for another writer (the busy timeout)
        // instead of failing when it first writes.
        let sql = format!("BEGIN IMMEDIATE;\n{}COMMIT;", self.sql);
        let result = sqlx::query_scalar_with(&sql, args)
            .persistent(true)
            .fetch_all(&mut *connection)
            .await;
        match result {
            Ok(lasts) => {
                guard.finished = true;
                self.ids_from_last(&lasts)
            }
            Err(error) => {
                // The statements after the failing one did not run, the COMMIT among them. A
                // failed BEGIN leaves no transaction, and the ROLLBACK's own failure is then
                // expected; the connection is closed all the same, to be sure.
                guard.finished = sqlx::query("ROLLBACK")
                    .execute(&mut *connection)
                    .await
                    .is_ok();
                Err(error.into())
            }
        }
    }
}

/// A connection in the middle of a script: kept when dropped only once `finished` (the script
/// committed or rolled back); closed otherwise (the caller cancelled, or the ROLLBACK failed).
struct Unfinished<'a> {
    held: Held<'a>,
    finished: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.held.give_up();
        }
    }
}

/// Locks the row of `session` until the transaction `conn` is in ends: the transactions that
/// add events to one session take their turns (see [`Script::run`]).
async fn lock_session(conn: &mut PgConnection, session: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE")
        .bind(session)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_splits_into_its_statements_with_their_arguments() {
        let mut script = Script::default();
        script.statement("INSERT INTO a VALUES (?, ?)");
        script.bind(1);
        script.bind("x");
        script.returning_ids(1);
        script.statement("DELETE FROM b");
        script.statement("UPDATE c SET d = ?");
        script.bind(Some(2.5));
        assert_eq!(script.statements(), 3);
        assert_eq!(
            script.split(),
            vec![
                (
                    "INSERT INTO a VALUES (?, ?) RETURNING id".to_owned(),
                    vec![Arg::from(1), Arg::from("x")]
                ),
                ("DELETE FROM b".to_owned(), Vec::new()),
                ("UPDATE c SET d = ?".to_owned(), vec![Arg::from(Some(2.5))]),
            ]
        );
    }

    #[test]
    fn sqlite_reads_each_insert_s_ids_from_its_last() {
        let mut script = Script::default();
        script.statement("INSERT INTO a VALUES (?), (?), (?)");
        script.returning_ids(3);
        script.statement("DELETE FROM b");
        script.statement("INSERT INTO a VALUES (?)");
        script.returning_ids(1);
        assert_eq!(
            script.sql,
            "INSERT INTO a VALUES (?), (?), (?);\nSELECT last_insert_rowid();\n\
             DELETE FROM b;\nINSERT INTO a VALUES (?);\nSELECT last_insert_rowid();\n"
        );
        assert_eq!(
            script.ids_from_last(&[12, 20]).unwrap(),
            vec![10, 11, 12, 20]
        );
        assert!(script.ids_from_last(&[12]).is_err(), "one last id missing");
        assert!(script.ids_from_last(&[1, 20]).is_ok());
        assert!(
            script.ids_from_last(&[i64::MIN, 20]).is_err(),
            "no id below the smallest"
        );
    }
}
