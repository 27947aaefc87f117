//! The tasks of the protocols a session is served over (A2A): each task's body as the protocol
//! writes it, its state in the protocol's word, and where to notify of its changes. The store
//! keeps them so that a task outlives the process that ran it; it reads only the columns.

use serde_json::Value;

use crate::db::{Row, query};
use crate::error::StoreError;
use crate::store::Store;
use crate::types::now_ms;

/// A task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The task id.
    pub id: String,
    /// The session it is a run of.
    pub session_id: String,
    /// The protocol that serves it (`a2a`).
    pub protocol: String,
    /// Its state, in the protocol's word.
    pub state: String,
    /// The task as the protocol writes it.
    pub body: Value,
    /// Where to notify of its changes (the protocol's settings, as it writes them).
    pub push: Vec<Value>,
    /// When it was first stored (milliseconds since the Unix epoch).
    pub created_at: i64,
    /// When it was last stored.
    pub updated_at: i64,
}

const TASK_COLUMNS: &str = "id, session_id, protocol, state, body, push, created_at, updated_at";

fn task_from_row(row: &Row) -> Result<TaskRecord, StoreError> {
    let body: String = row.get("body")?;
    let push: String = row.get("push")?;
    Ok(TaskRecord {
        id: row.get("id")?,
        session_id: row.get("session_id")?,
        protocol: row.get("protocol")?,
        state: row.get("state")?,
        body: serde_json::from_str(&body).map_err(|e| StoreError::corrupt("task", e))?,
        push: serde_json::from_str(&push).map_err(|e| StoreError::corrupt("task's push", e))?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

impl Store {
    /// Stores the task `id` of `session` as it stands now: its `state` and `body` replace what
    /// was stored; its push settings are kept.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`] when the session is not stored, or a database error.
    pub async fn put_task(
        &self,
        id: &str,
        session: &str,
        protocol: &str,
        state: &str,
        body: &Value,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let written = self
            .pool
            .execute(
                query(
                    "INSERT INTO tasks (id, session_id, protocol, state, body, created_at, \
                     updated_at) SELECT ?, id, ?, ?, ?, ?, ? FROM sessions WHERE id = ? \
                     ON CONFLICT (id) DO UPDATE SET state = excluded.state, \
                     body = excluded.body, updated_at = excluded.updated_at",
                )
                .bind(id)
                .bind(protocol)
                .bind(state)
                .bind(body.to_string())
                .bind(now)
                .bind(now)
                .bind(session),
            )
            .await?;
        if written == 0 {
            return Err(StoreError::NoSession(session.to_owned()));
        }
        Ok(())
    }

    /// Replaces where to notify of the task `id`'s changes.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoTask`] when the task is not stored, or a database error.
    pub async fn set_task_push(&self, id: &str, push: &[Value]) -> Result<(), StoreError> {
        let written = self
            .pool
            .execute(
                query("UPDATE tasks SET push = ? WHERE id = ?")
                    .bind(Value::Array(push.to_vec()).to_string())
                    .bind(id),
            )
            .await?;
        if written == 0 {
            return Err(StoreError::NoTask(id.to_owned()));
        }
        Ok(())
    }

    /// The task `id`, if it is stored.
    ///
    /// # Errors
    ///
    /// A database error, or a row that cannot be read back.
    pub async fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.pool
            .fetch_optional(
                query(format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?")).bind(id),
            )
            .await?
            .map(|row| task_from_row(&row))
            .transpose()
    }

    /// The tasks of `protocol`, of `session` only when one is given, oldest first: the newest
    /// `limit` of them.
    ///
    /// # Errors
    ///
    /// A database error, or a row that cannot be read back.
    pub async fn tasks(
        &self,
        protocol: &str,
        session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .pool
            .fetch_all(
                query(format!(
                    "SELECT {TASK_COLUMNS} FROM tasks WHERE protocol = ? \
                     AND (? IS NULL OR session_id = ?) ORDER BY created_at DESC, id DESC LIMIT ?"
                ))
                .bind(protocol)
                .bind(session)
                .bind(session)
                .bind(limit),
            )
            .await?;
        rows.iter().rev().map(task_from_row).collect()
    }
}
