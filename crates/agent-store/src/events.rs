//! Events, each with an id that only grows, and batches of events and memory changes written in
//! one transaction.

use serde_json::Value;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{Row, Sqlite, Transaction};

use crate::error::StoreError;
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
    Ok(StoredEvent {
        id,
        session_id: session.to_owned(),
        run_id: event.run_id,
        at: event.at,
        kind: event.kind,
        data: event.data,
    })
}

/// Inserts `events` in `tx` with one statement and returns them with their ids. The rows of one
/// `INSERT` take increasing ids in the order of its `VALUES`; `RETURNING` may list them in any
/// order, so the ids are sorted before they are matched to the events.
async fn insert_events(
    conn: &mut SqliteConnection,
    session: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows = vec!["(?, ?, ?, ?, ?)"; events.len()].join(", ");
    let sql = format!(
        "INSERT INTO events (session_id, run_id, at, kind, data) VALUES {rows} RETURNING id"
    );
    let mut query = sqlx::query_scalar::<_, EventId>(&sql);
    for event in &events {
        query = query
            .bind(session)
            .bind(event.run_id)
            .bind(event.at)
            .bind(event.kind.as_str())
            .bind(event.data.to_string());
    }
    let mut ids = query.fetch_all(&mut *conn).await?;
    if ids.len() != events.len() {
        return Err(StoreError::corrupt(
            "event insert",
            format!("{} ids for {} events", ids.len(), events.len()),
        ));
    }
    ids.sort_unstable();
    Ok(events
        .into_iter()
        .zip(ids)
        .map(|(event, id)| StoredEvent {
            id,
            session_id: session.to_owned(),
            run_id: event.run_id,
            at: event.at,
            kind: event.kind,
            data: event.data,
        })
        .collect())
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
    /// A database error (among them: no such session); nothing is written then.
    pub async fn write_batch(
        &self,
        session: &str,
        batch: Batch,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        // One statement is atomic by itself: a batch of events alone (the usual one while a
        // model call or a tool runs) needs no BEGIN and COMMIT round trips.
        if batch.memory.is_empty() && batch.events.len() <= crate::messages::ROWS_PER_STATEMENT {
            let mut conn = self.pool.acquire().await?;
            return insert_events(&mut conn, session, batch.events).await;
        }
        let mut tx = self.write().await?;
        crate::messages::apply(&mut tx, session, batch.memory).await?;
        let mut stored = Vec::with_capacity(batch.events.len());
        let mut events = batch.events.into_iter().peekable();
        while events.peek().is_some() {
            let chunk: Vec<NewEvent> = events
                .by_ref()
                .take(crate::messages::ROWS_PER_STATEMENT)
                .collect();
            stored.extend(insert_events(&mut tx, session, chunk).await?);
        }
        tx.commit().await?;
        Ok(stored)
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
