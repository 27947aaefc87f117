//! Events, each with an id that only grows, and batches of events and memory changes written in
//! one transaction.

use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use crate::error::StoreError;
use crate::script::Script;
use crate::store::Store;
use crate::types::{Batch, EventId, NewEvent, StoredEvent};

/// Inserts one event in `tx` and returns it with its id.
pub(crate) async fn insert_event(
    tx: &mut Transaction<'static, Sqlite>,
    session: &str,
    event: NewEvent,
) -> Result<StoredEvent, StoreError> {
    let id: EventId = sqlx::query_scalar(
        "INSERT INTO events (session_id, run_id, at, kind, data) VALUES (?, ?, ?, ?, ?) \
         RETURNING id",
    )
    .bind(session)
    .bind(event.run_id)
    .bind(event.at)
    .bind(event.kind.as_str())
    .bind(event.data.to_string())
    .fetch_one(&mut **tx)
    .await?;
    Ok(stored(event, id, session))
}

/// `event` as stored with `id` for `session`.
fn stored(event: NewEvent, id: EventId, session: &str) -> StoredEvent {
    StoredEvent {
        id,
        session_id: session.to_owned(),
        run_id: event.run_id,
        at: event.at,
        kind: event.kind,
        data: event.data,
    }
}

/// Adds to `script` the statements inserting `events` (one per [`ROWS_PER_STATEMENT`]), each
/// returning the ids it gave.
///
/// [`ROWS_PER_STATEMENT`]: crate::messages::ROWS_PER_STATEMENT
fn insert_events(
    script: &mut Script,
    session: &str,
    events: &[NewEvent],
) -> Result<(), StoreError> {
    for chunk in events.chunks(crate::messages::ROWS_PER_STATEMENT) {
        let rows = vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        script.statement(&format!(
            "INSERT INTO events (session_id, run_id, at, kind, data) VALUES {rows} RETURNING id"
        ));
        for event in chunk {
            script.bind(session.to_owned())?;
            script.bind(event.run_id)?;
            script.bind(event.at)?;
            script.bind(event.kind.as_str())?;
            script.bind(event.data.to_string())?;
        }
    }
    Ok(())
}

fn event_from_row(row: &SqliteRow) -> Result<StoredEvent, StoreError> {
    let kind: String = row.try_get("kind")?;
    let data: String = row.try_get("data")?;
    Ok(StoredEvent {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        run_id: row.try_get("run_id")?,
        at: row.try_get("at")?,
        kind: kind.parse()?,
        data: serde_json::from_str::<Value>(&data).map_err(|e| StoreError::corrupt("event", e))?,
    })
}

impl Store {
    /// Writes `batch` for the session in one transaction — its memory changes, then its events
    /// — and returns the events with their ids, in order. A crash loses the whole batch or
    /// nothing of it.
    ///
    /// # Errors
    ///
    /// A database error (among them: no such session); nothing is written then. (SQLite
    /// returning fewer or more ids than the batch has events is reported as
    /// [`StoreError::Corrupt`] after the batch was written.)
    pub async fn write_batch(
        &self,
        session: &str,
        batch: Batch,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        // One call to SQLite for the whole batch (see `Script`).
        let mut script = Script::default();
        crate::messages::apply(&mut script, session, batch.memory)?;
        insert_events(&mut script, session, &batch.events)?;
        let mut ids = script.run(&self.pool).await?;
        if ids.len() != batch.events.len() {
            return Err(StoreError::corrupt(
                "event insert",
                format!("{} ids for {} events", ids.len(), batch.events.len()),
            ));
        }
        // The rows of one `INSERT` take increasing ids in the order of its `VALUES`, and a
        // later statement's rows higher ones; `RETURNING` may list them in any order.
        ids.sort_unstable();
        Ok(batch
            .events
            .into_iter()
            .zip(ids)
            .map(|(event, id)| stored(event, id, session))
            .collect())
    }

    /// Stores one event; returns it with its id.
    ///
    /// # Errors
    ///
    /// A database error (among them: no such session).
    pub async fn append_event(
        &self,
        session: &str,
        event: NewEvent,
    ) -> Result<StoredEvent, StoreError> {
        let mut tx = self.write().await?;
        let stored = insert_event(&mut tx, session, event).await?;
        tx.commit().await?;
        Ok(stored)
    }

    /// The session's events with an id above `after` (all of them for `None`), oldest first,
    /// at most `limit`: a client that saw event `n` asks for `events_after(session, Some(n),
    /// ...)` and misses nothing.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn events_after(
        &self,
        session: &str,
        after: Option<EventId>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query(
            "SELECT id, session_id, run_id, at, kind, data FROM events \
             WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
        )
        .bind(session)
        .bind(after.unwrap_or(0))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(event_from_row)
        .collect()
    }

    /// How many events the session has.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn event_count(&self, session: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE session_id = ?")
            .bind(session)
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// The id of the session's newest event (`None` when it has none).
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn last_event_id(&self, session: &str) -> Result<Option<EventId>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT MAX(id) FROM events WHERE session_id = ?")
                .bind(session)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}
