//! [`Script`]: several statements sent to SQLite as one call.
//!
//! Each call through sqlx is a trip to the connection's worker thread and back (two thread
//! wake-ups), and a pool connection is pinged once more when it is released. A batch written as
//! `BEGIN`, a statement per table and `COMMIT` took five trips; as one script it takes two,
//! whatever it holds (sqlx binds the `?` of successive statements to successive arguments).

use sqlx::pool::PoolConnection;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Arguments, Encode, Sqlite, SqlitePool, Type};

use crate::error::StoreError;
use crate::types::EventId;

/// Statements and their arguments, run in order by one call.
#[derive(Default)]
pub(crate) struct Script {
    sql: String,
    statements: usize,
    args: SqliteArguments<'static>,
}

impl Script {
    /// Appends a statement (its `?` take the next arguments [`bind`](Self::bind) adds).
    pub(crate) fn statement(&mut self, sql: &str) {
        self.sql.push_str(sql);
        self.sql.push_str(";\n");
        self.statements += 1;
    }

    /// Adds the next argument.
    pub(crate) fn bind<T>(&mut self, value: T) -> Result<(), StoreError>
    where
        T: Encode<'static, Sqlite> + Type<Sqlite> + Send + 'static,
    {
        self.args
            .add(value)
            .map_err(|error| StoreError::Database(sqlx::Error::Encode(error)))
    }

    /// How many statements it holds.
    #[cfg(test)]
    pub(crate) fn statements(&self) -> usize {
        self.statements
    }

    /// Runs the statements on `conn` (inside the caller's transaction).
    pub(crate) async fn execute_in(
        self,
        conn: &mut sqlx::SqliteConnection,
    ) -> Result<(), StoreError> {
        if !self.is_empty() {
            sqlx::query_with(&self.sql, self.args)
                .persistent(false)
                .execute(conn)
                .await?;
        }
        Ok(())
    }

    /// Whether it holds no statement.
    pub(crate) fn is_empty(&self) -> bool {
        self.statements == 0
    }

    /// Runs the statements in one transaction (a single statement is one by itself) and
    /// returns the first column of every row they return (the ids of `RETURNING id`), in the
    /// order SQLite gives them. On an error nothing is written: the transaction is rolled back,
    /// and a connection that cannot say it was is closed rather than reused. So is one whose
    /// call was dropped half-way (the caller cancelled): sqlx's thread may have begun the
    /// transaction and not reached the `COMMIT`. (The in-memory store's one connection is its
    /// database: closing it loses the data; that store is for tests.)
    ///
    /// Scripts are not kept as prepared statements: their text depends on the batch's shape
    /// (how many rows of each kind), so few would be used twice.
    pub(crate) async fn run(self, pool: &SqlitePool) -> Result<Vec<EventId>, StoreError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = pool.acquire().await?;
        if self.statements == 1 {
            return Ok(sqlx::query_scalar_with(&self.sql, self.args)
                .persistent(false)
                .fetch_all(&mut *conn)
                .await?);
        }
        let mut guard = Unfinished {
            conn,
            finished: false,
        };
        // Taken at once (`IMMEDIATE`), so that it waits for another writer (the busy timeout)
        // instead of failing when it first writes.
        let sql = format!("BEGIN IMMEDIATE;\n{}COMMIT;", self.sql);
        let result = sqlx::query_scalar_with(&sql, self.args)
            .persistent(false)
            .fetch_all(&mut *guard.conn)
            .await;
        match result {
            Ok(ids) => {
                guard.finished = true;
                Ok(ids)
            }
            Err(error) => {
                // The statements after the failing one did not run, the COMMIT among them. A
                // failed BEGIN leaves no transaction, and the ROLLBACK's own failure is then
                // expected; the connection is closed all the same, to be sure.
                guard.finished = sqlx::query("ROLLBACK")
                    .execute(&mut *guard.conn)
                    .await
                    .is_ok();
                Err(error.into())
            }
        }
    }
}

/// A connection in the middle of a script: returned to the pool when dropped only once
/// `finished` (the script committed or rolled back); closed otherwise (the caller cancelled,
/// or the ROLLBACK failed).
struct Unfinished {
    conn: PoolConnection<Sqlite>,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished {
            self.conn.close_on_drop();
        }
    }
}
