//! A session's memory: every message in order, changed in the same transactions as the events,
//! and read back turn-safe for a resume.

use std::collections::HashSet;

use crate::db::query;
use crate::error::StoreError;
use crate::script::Script;
use crate::store::Store;
use crate::texts::{TextCache, decoded, texts_of};
use crate::types::MemoryWrite;
use agent_core::{Message, Role, ToolCall, cancelled_observation};

/// Adds the statements applying memory changes, in order, to `script`; consecutive puts go in
/// multi-row statements (a later put of the same position replaces an earlier one, as one by
/// one).
pub(crate) fn apply(
    script: &mut Script,
    texts: &mut TextCache,
    session: &str,
    writes: Vec<MemoryWrite>,
) -> Result<(), StoreError> {
    let mut puts: Vec<(u64, String)> = Vec::new();
    for write in writes {
        match write {
            MemoryWrite::Put { seq, message } => {
                puts.push((seq, texts.encode(&message, session, script)?));
                if puts.len() == crate::script::ROWS_PER_STATEMENT {
                    put_all(script, session, std::mem::take(&mut puts))?;
                }
            }
            MemoryWrite::Remove { seqs } => {
                put_all(script, session, std::mem::take(&mut puts))?;
                for chunk in seqs.chunks(crate::script::ROWS_PER_STATEMENT) {
                    let marks = vec!["?"; chunk.len()].join(", ");
                    script.statement(&format!(
                        "DELETE FROM messages WHERE session_id = ? AND seq IN ({marks})"
                    ));
                    script.bind(session);
                    for seq in chunk {
                        script.bind(seq_of(*seq));
                    }
                }
            }
        }
    }
    put_all(script, session, puts)
}

/// Adds the statement storing `puts`. A position put twice keeps its last message, as one by
/// one (a PostgreSQL upsert may not touch one row twice in a statement).
fn put_all(
    script: &mut Script,
    session: &str,
    mut puts: Vec<(u64, String)>,
) -> Result<(), StoreError> {
    if puts.is_empty() {
        return Ok(());
    }
    let mut seen = HashSet::with_capacity(puts.len());
    if !puts.iter().all(|(seq, _)| seen.insert(*seq)) {
        let mut last = std::collections::HashMap::with_capacity(puts.len());
        for (at, (seq, _)) in puts.iter().enumerate() {
            last.insert(*seq, at);
        }
        let mut at = 0;
        puts.retain(|(seq, _)| {
            let keep = last.get(seq) == Some(&at);
            at += 1;
            keep
        });
    }
    let rows = vec!["(?, ?, ?, 1)"; puts.len()].join(", ");
    script.statement(&format!(
        "INSERT INTO messages (session_id, seq, message, refs) VALUES {rows} \
         ON CONFLICT (session_id, seq) DO UPDATE SET message = excluded.message, \
         refs = excluded.refs"
    ));
    for (seq, message) in puts {
        script.bind(session);
        script.bind(seq_of(seq));
        script.bind(message);
    }
    Ok(())
}

fn seq_of(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// `messages` made valid for a model request, whatever a crash left: every assistant tool call
/// without a result gets the cancelled observation ([`cancelled_observation`], the text a
/// cancelled run gives), right after the results it has; every `tool` message that answers no
/// call of the assistant message before it is dropped.
#[must_use]
pub fn turn_safe(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    // The calls of the newest assistant message still waiting for a result, in call order.
    let mut open: Vec<ToolCall> = Vec::new();
    let close = |out: &mut Vec<Message>, open: &mut Vec<ToolCall>| {
        for call in open.drain(..) {
            out.push(Message::tool_message(
                cancelled_observation(&call),
                &call.function.name,
                &call.id,
            ));
        }
    };
    for message in messages {
        if message.role == Role::Tool {
            let id = message.tool_call_id.as_deref().unwrap_or_default();
            if let Some(at) = open.iter().position(|call| call.id == id) {
                open.remove(at);
                out.push(message);
            }
            continue;
        }
        close(&mut out, &mut open);
        if message.has_tool_calls() {
            let mut seen = HashSet::new();
            open = message
                .calls()
                .iter()
                .filter(|call| seen.insert(call.id.clone()))
                .cloned()
                .collect();
        }
        out.push(message);
    }
    close(&mut out, &mut open);
    out
}

impl Store {
    /// Every message of the session's memory, in order, as stored.
    ///
    /// # Errors
    ///
    /// A database error, or a message that is not a valid `Message`.
    pub async fn messages(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                query("SELECT message, refs FROM messages WHERE session_id = ? ORDER BY seq")
                    .bind(session),
            )
            .await?;
        let texts = texts_of(&self.pool, session, &rows, "message").await?;
        rows.iter()
            .map(|row| {
                let text = decoded(row, "message", &texts)?;
                serde_json::from_str(&text).map_err(|e| StoreError::corrupt("message", e))
            })
            .collect()
    }

    /// The session's memory as a resumed agent gets it: [`Store::messages`] made
    /// [`turn_safe`].
    ///
    /// # Errors
    ///
    /// As [`Store::messages`].
    pub async fn restore_memory(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        Ok(turn_safe(self.messages(session).await?))
    }

    /// Replaces the session's stored memory by `messages`, given with their positions (the
    /// memory's message ids), in one transaction.
    ///
    /// # Errors
    ///
    /// A database error, or a message that cannot be serialised.
    pub async fn replace_messages<'a>(
        &self,
        session: &str,
        messages: impl IntoIterator<Item = (u64, &'a Message)>,
    ) -> Result<(), StoreError> {
        let mut writes = Vec::new();
        for (seq, message) in messages {
            let message =
                serde_json::to_string(message).map_err(|e| StoreError::corrupt("message", e))?;
            writes.push(MemoryWrite::Put { seq, message });
        }
        let mut script = Script::default();
        script.statement("DELETE FROM messages WHERE session_id = ?");
        script.bind(session);
        apply(&mut script, &mut TextCache::default(), session, writes)?;
        script.run(&self.batches, Some(session)).await?;
        Ok(())
    }
}
