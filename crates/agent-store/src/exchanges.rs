//! The model exchanges of a session: each request sent to a model (as a change from the
//! previous request of its stream, so a run's requests take space in proportion to the run,
//! not to its square), and the reply or the error it got.

use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::error::StoreError;
use crate::events::texts_of;
use crate::script::Script;
use crate::store::Store;
use crate::texts::{TextCache, Texts};
use crate::types::{ExchangePart, NewExchange, StoredExchange};

/// Adds to `script` the statements inserting `exchanges`; long texts are stored once.
pub(crate) fn insert_exchanges(
    script: &mut Script,
    texts: &mut TextCache,
    session: &str,
    exchanges: &[NewExchange],
) -> Result<(), StoreError> {
    let mut data = Vec::with_capacity(exchanges.len());
    for exchange in exchanges {
        data.push(texts.encode(&exchange.data.to_string(), session, script)?);
    }
    let mut data = data.into_iter();
    for chunk in exchanges.chunks(crate::messages::ROWS_PER_STATEMENT) {
        let marks = vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        script.statement(&format!(
            "INSERT OR REPLACE INTO exchanges (session_id, seq, part, run_id, stream, at, data) \
             VALUES {marks}"
        ));
        for exchange in chunk {
            script.bind(session.to_owned())?;
            script.bind(exchange.seq)?;
            script.bind(exchange.part.code())?;
            script.bind(exchange.run_id)?;
            script.bind(exchange.stream)?;
            script.bind(exchange.at)?;
            script.bind(data.next().unwrap_or_default())?;
        }
    }
    Ok(())
}

fn exchange_from_row(row: &SqliteRow, texts: &Texts) -> Result<StoredExchange, StoreError> {
    let part: i64 = row.try_get("part")?;
    let data: String = row.try_get("data")?;
    let data = texts.decode(&data)?;
    Ok(StoredExchange {
        session_id: row.try_get("session_id")?,
        run_id: row.try_get("run_id")?,
        stream: row.try_get("stream")?,
        seq: row.try_get("seq")?,
        part: ExchangePart::from_code(part)
            .ok_or_else(|| StoreError::corrupt("exchange", format!("unknown part {part}")))?,
        at: row.try_get("at")?,
        data: serde_json::from_str::<Value>(&data)
            .map_err(|e| StoreError::corrupt("exchange", e))?,
    })
}

impl Store {
    /// The session's model exchanges after request `after` (all for `None`), in the order of
    /// their requests (a request, then its reply or error), at most `limit` rows. A request's
    /// `data` is what its writer stored: `agent-session` stores a change from the previous
    /// request of the same `stream` and rebuilds the bodies.
    ///
    /// # Errors
    ///
    /// A database error, or a row that cannot be read back.
    pub async fn exchanges_after(
        &self,
        session: &str,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<StoredExchange>, StoreError> {
        let rows = sqlx::query(
            "SELECT session_id, seq, part, run_id, stream, at, data, 1 AS refs FROM exchanges \
             WHERE session_id = ? AND seq > ? ORDER BY seq, part LIMIT ?",
        )
        .bind(session)
        .bind(after.unwrap_or(-1))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        let texts = texts_of(&self.pool, session, &rows, "data").await?;
        rows.iter()
            .map(|row| exchange_from_row(row, &texts))
            .collect()
    }

    /// The number the session's next model request takes: one more than the highest stored
    /// (0 for a session without exchanges).
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn next_exchange_seq(&self, session: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM exchanges WHERE session_id = ?",
        )
        .bind(session)
        .fetch_one(&self.pool)
        .await?)
    }
}
