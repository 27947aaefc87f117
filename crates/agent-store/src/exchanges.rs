//! The model exchanges of a session: each request sent to a model (as a change from the
//! previous request of its stream, so a run's requests take space in proportion to the run,
//! not to its square), and the reply or the error it got.

use serde_json::Value;

use crate::db::{Row, query};
use crate::error::StoreError;
use crate::script::Script;
use crate::store::Store;
use crate::texts::{TextCache, Texts, texts_of};
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
        data.push(texts.encode(exchange.data.as_str(), session, script)?);
    }
    // A row is written once per (seq, part): the last of the batch wins, as one by one (a
    // PostgreSQL upsert may not touch one row twice in a statement).
    let mut rows: Vec<(&NewExchange, String)> = Vec::with_capacity(exchanges.len());
    for (exchange, data) in exchanges.iter().zip(data) {
        let key = (exchange.seq, exchange.part.code());
        rows.retain(|(kept, _)| (kept.seq, kept.part.code()) != key);
        rows.push((exchange, data));
    }
    for chunk in rows.chunks(crate::script::ROWS_PER_STATEMENT) {
        let marks = vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        script.statement(&format!(
            "INSERT INTO exchanges (session_id, seq, part, run_id, stream, at, data) \
             VALUES {marks} ON CONFLICT (session_id, seq, part) DO UPDATE SET \
             run_id = excluded.run_id, stream = excluded.stream, at = excluded.at, \
             data = excluded.data"
        ));
        for (exchange, data) in chunk {
            script.bind(session);
            script.bind(exchange.seq);
            script.bind(exchange.part.code());
            script.bind(exchange.run_id);
            script.bind(exchange.stream);
            script.bind(exchange.at);
            script.bind(data.as_str());
        }
    }
    Ok(())
}

fn exchange_from_row(row: &Row, texts: &Texts) -> Result<StoredExchange, StoreError> {
    let part: i64 = row.get("part")?;
    let data: String = row.get("data")?;
    let data = texts.decode(&data)?;
    Ok(StoredExchange {
        session_id: row.get("session_id")?,
        run_id: row.get("run_id")?,
        stream: row.get("stream")?,
        seq: row.get("seq")?,
        part: ExchangePart::from_code(part)
            .ok_or_else(|| StoreError::corrupt("exchange", format!("unknown part {part}")))?,
        at: row.get("at")?,
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
        let rows = self
            .pool
            .fetch_all(
                query(
                    "SELECT session_id, seq, part, run_id, stream, at, data, \
                     CAST(1 AS BIGINT) AS refs FROM exchanges \
                     WHERE session_id = ? AND seq > ? ORDER BY seq, part LIMIT ?",
                )
                .bind(session)
                .bind(after.unwrap_or(-1))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
            )
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
        Ok(self
            .pool
            .scalar(
                query("SELECT COALESCE(MAX(seq) + 1, 0) FROM exchanges WHERE session_id = ?")
                    .bind(session),
            )
            .await?)
    }
}
