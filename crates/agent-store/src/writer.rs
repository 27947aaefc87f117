//! [`SessionWriter`]: the batches of one session, each in one transaction, with the long texts
//! it already stored remembered so each is hashed and sent to SQLite once.

use crate::error::StoreError;
use crate::script::Script;
use crate::store::Store;
use crate::texts::TextCache;
use crate::types::{Batch, EventId, NewEvent, StoredEvent};

/// Writes the batches of one session (what a recorder commits step after step).
#[derive(Debug)]
pub struct SessionWriter {
    store: Store,
    session: String,
    texts: TextCache,
}

impl Store {
    /// A writer of `session`'s batches.
    #[must_use]
    pub fn session_writer(&self, session: &str) -> SessionWriter {
        SessionWriter {
            store: self.clone(),
            session: session.to_owned(),
            texts: TextCache::default(),
        }
    }
}

impl SessionWriter {
    /// The session it writes.
    #[must_use]
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The store it writes to.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Writes `batch` in one transaction — its memory changes, its events, its model
    /// exchanges, each long text once — and returns its events with their ids, in order
    /// ([`Written::into_stored`] reads them as [`StoredEvent`]s: only a writer someone
    /// listens to needs that). A crash loses the whole batch or nothing of it.
    ///
    /// # Errors
    ///
    /// A database error (among them: no such session); nothing is written then. (SQLite
    /// returning fewer or more ids than the batch has events is reported as
    /// [`StoreError::Corrupt`] after the batch was written.)
    pub async fn write(&mut self, batch: Batch) -> Result<Written, StoreError> {
        if batch.is_empty() {
            return Ok(Written {
                session: self.session.clone(),
                events: Vec::new(),
                ids: Vec::new(),
            });
        }
        // One call to SQLite for the whole batch (see `Script`). Texts the cache had not seen
        // go in before the rows that refer to them.
        let mut script = Script::default();
        let session = self.session.as_str();
        let texts = &mut self.texts;
        crate::messages::apply(&mut script, texts, session, batch.memory)?;
        crate::events::insert_events(&mut script, texts, session, &batch.events)?;
        crate::exchanges::insert_exchanges(&mut script, texts, session, &batch.exchanges)?;
        let result = script.run(&self.store.batches, Some(session)).await;
        let mut ids = match result {
            Ok(ids) => ids,
            Err(error) => {
                // The texts of a batch rolled back were not stored: forget every text, so
                // that none is referred to without being written again.
                self.texts = TextCache::default();
                return Err(error);
            }
        };
        if ids.len() != batch.events.len() {
            return Err(StoreError::corrupt(
                "event insert",
                format!("{} ids for {} events", ids.len(), batch.events.len()),
            ));
        }
        // The rows of one `INSERT` take increasing ids in the order of its `VALUES`, and a
        // later statement's rows higher ones; PostgreSQL's `RETURNING` may list them in any
        // order (SQLite's are in order already).
        ids.sort_unstable();
        Ok(Written {
            session: self.session.clone(),
            events: batch.events,
            ids,
        })
    }
}

/// The events of a batch [`SessionWriter::write`] stored, with their ids.
#[derive(Debug)]
pub struct Written {
    session: String,
    events: Vec<NewEvent>,
    ids: Vec<EventId>,
}

impl Written {
    /// The ids the events took, in the batch's order.
    #[must_use]
    pub fn ids(&self) -> &[EventId] {
        &self.ids
    }

    /// The events as stored (their JSON read back as [`serde_json::Value`]s).
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`]: an event's JSON nests deeper than serde_json reads.
    pub fn into_stored(self) -> Result<Vec<StoredEvent>, StoreError> {
        let session = self.session;
        self.events
            .into_iter()
            .zip(self.ids)
            .map(|(event, id)| crate::events::stored(event, id, &session))
            .collect()
    }
}
