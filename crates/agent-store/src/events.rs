//! Events, each with an id that only grows, and batches of events and memory changes written in
//! one transaction.

use serde_json::Value;

use crate::db::{Row, Tx, query};
use crate::error::StoreError;
use crate::script::Script;
use crate::store::Store;
use crate::texts::{TextCache, Texts, decoded, texts_of};
use crate::types::{Batch, EventId, NewEvent, StoredEvent};

/// Inserts one event in `tx` and returns it with its id.
pub(crate) async fn insert_event(
    tx: &mut Tx,
    session: &str,
    event: NewEvent,
) -> Result<StoredEvent, StoreError> {
    let id: EventId = tx
        .scalar(
            query(
                "INSERT INTO events (session_id, run_id, at, kind, data) VALUES (?, ?, ?, ?, ?) \
                 RETURNING id",
            )
            .bind(session)
            .bind(event.run_id)
            .bind(event.at)
            .bind(event.kind.as_str())
            .bind(event.data.as_str()),
        )
        .await?;
    crate::notify::notify(tx, session, id).await?;
    stored(event, id, session)
}

/// Adds to `script` the statements inserting `events` (one per [`ROWS_PER_STATEMENT`]), each
/// returning the ids it gave; long texts are stored once ([`TextCache`]).
///
/// [`ROWS_PER_STATEMENT`]: crate::script::ROWS_PER_STATEMENT
pub(crate) fn insert_events(
    script: &mut Script,
    texts: &mut TextCache,
    session: &str,
    events: &[NewEvent],
) -> Result<(), StoreError> {
    let mut data = Vec::with_capacity(events.len());
    for event in events {
        data.push(texts.encode(event.data.as_str(), session, script)?);
    }
    let mut data = data.into_iter();
    for chunk in events.chunks(crate::script::ROWS_PER_STATEMENT) {
        let marks = vec!["(?, ?, ?, ?, ?, 1)"; chunk.len()].join(", ");
        script.statement(&format!(
            "INSERT INTO events (session_id, run_id, at, kind, data, refs) VALUES {marks}"
        ));
        script.returning_ids(chunk.len());
        for event in chunk {
            script.bind(session);
            script.bind(event.run_id);
            script.bind(event.at);
            script.bind(event.kind.as_str());
            script.bind(data.next().unwrap_or_default());
        }
    }
    Ok(())
}

/// `event` as stored with `id` for `session`.
pub(crate) fn stored(
    event: NewEvent,
    id: EventId,
    session: &str,
) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent {
        id,
        session_id: session.to_owned(),
        run_id: event.run_id,
        at: event.at,
        kind: event.kind,
        data: event
            .data
            .to_value()
            .map_err(|e| StoreError::corrupt("event", e))?,
    })
}

fn event_from_row(row: &Row, texts: &Texts) -> Result<StoredEvent, StoreError> {
    let kind: String = row.get("kind")?;
    let data = decoded(row, "data", texts)?;
    Ok(StoredEvent {
        id: row.get("id")?,
        session_id: row.get("session_id")?,
        run_id: row.get("run_id")?,
        at: row.get("at")?,
        kind: kind.parse()?,
        data: serde_json::from_str::<Value>(&data).map_err(|e| StoreError::corrupt("event", e))?,
    })
}

impl Store {
    /// Writes `batch` for the session in one transaction — its memory changes, then its events
    /// and model exchanges — and returns the events with their ids, in order. A crash loses
    /// the whole batch or nothing of it. A writer that writes many batches of one session
    /// should use [`Store::session_writer`], which remembers the long texts it stored.
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
        self.session_writer(session)
            .write(batch)
            .await?
            .into_stored()
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
        let batch = Batch {
            events: vec![event],
            ..Batch::default()
        };
        self.write_batch(session, batch)
            .await?
            .pop()
            .ok_or_else(|| StoreError::corrupt("event insert", "no id for the event"))
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
        let rows = self
            .pool
            .fetch_all(
                query(
                    "SELECT id, session_id, run_id, at, kind, data, refs FROM events \
                     WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
                )
                .bind(session)
                .bind(after.unwrap_or(0))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
            )
            .await?;
        let texts = texts_of(&self.pool, session, &rows, "data").await?;
        rows.iter().map(|row| event_from_row(row, &texts)).collect()
    }

    /// How many events the session has.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn event_count(&self, session: &str) -> Result<u64, StoreError> {
        let count: i64 = self
            .pool
            .scalar(query("SELECT COUNT(*) FROM events WHERE session_id = ?").bind(session))
            .await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// The id of the session's newest event (`None` when it has none).
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn last_event_id(&self, session: &str) -> Result<Option<EventId>, StoreError> {
        Ok(self
            .pool
            .scalar(query("SELECT MAX(id) FROM events WHERE session_id = ?").bind(session))
            .await?)
    }
}
