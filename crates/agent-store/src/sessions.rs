//! Sessions: create, read, list, delete, change state.

use std::path::PathBuf;

use serde_json::Value;

use crate::db::{Row, query};
use crate::error::StoreError;
use crate::store::Store;
use crate::types::{NewSession, SessionRecord, SessionState, now_ms};

/// The characters of a task kept as a session's title.
pub const TITLE_CHARS: usize = 80;

/// The columns [`session_from_row`] reads.
const SESSION_COLUMNS: &str = "id, agent, settings, workspace, state, title, created_at, \
    updated_at, (SELECT COUNT(*) FROM runs WHERE runs.session_id = sessions.id) AS runs";

/// `task` on one line, at most [`TITLE_CHARS`] characters (an ellipsis marks a cut).
#[must_use]
pub fn title_of(task: &str) -> String {
    let line = task.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let mut title: String = line.chars().take(TITLE_CHARS - 1).collect();
    title.push('…');
    title
}

pub(crate) fn session_from_row(row: &Row) -> Result<SessionRecord, StoreError> {
    let settings: String = row.get("settings")?;
    let state: String = row.get("state")?;
    let workspace: String = row.get("workspace")?;
    Ok(SessionRecord {
        id: row.get("id")?,
        agent: row.get("agent")?,
        settings: serde_json::from_str(&settings)
            .map_err(|e| StoreError::corrupt("session settings", e))?,
        workspace: PathBuf::from(workspace),
        state: state.parse()?,
        title: row.get("title")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
        runs: row.get("runs")?,
    })
}

impl Store {
    /// Creates a session, idle, with no runs.
    ///
    /// # Errors
    ///
    /// A database error (among them: the id is taken).
    pub async fn create_session(&self, new: NewSession) -> Result<SessionRecord, StoreError> {
        let id = new
            .id
            .unwrap_or_else(|| uuid::Uuid::new_v4().as_hyphenated().to_string());
        let settings = match new.settings {
            Value::Null => "{}".to_owned(),
            other => other.to_string(),
        };
        let now = now_ms();
        self.pool
            .execute(
                query(format!(
                    "INSERT INTO sessions (id, agent, settings, workspace, state, title, \
                     created_at, updated_at) VALUES (?, ?, ?, ?, 'idle', '', ?, {})",
                    self.dialect().touched()
                ))
                .bind(&id)
                .bind(&new.agent)
                .bind(settings)
                .bind(new.workspace.to_string_lossy().into_owned())
                .bind(now)
                .bind(now),
            )
            .await?;
        self.session(&id).await
    }

    /// The session `id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                query(format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
                ))
                .bind(id),
            )
            .await?
            .ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
        session_from_row(&row)
    }

    /// The session whose id is `prefix` or, failing that, the only one whose id starts with
    /// it (so a person can type the first characters of an id).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], [`StoreError::Ambiguous`], or a database error.
    pub async fn find_session(&self, prefix: &str) -> Result<SessionRecord, StoreError> {
        match self.session(prefix).await {
            Err(StoreError::NoSession(_)) => {}
            other => return other,
        }
        let pattern = format!(
            "{}%",
            prefix
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        // Case does not matter (SQLite's LIKE ignores it, PostgreSQL's does not).
        let rows = self
            .pool
            .fetch_all(
                query(format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions \
                     WHERE lower(id) LIKE lower(?) ESCAPE '\\' LIMIT 2"
                ))
                .bind(&pattern),
            )
            .await?;
        match rows.as_slice() {
            [row] => session_from_row(row),
            [] => Err(StoreError::NoSession(prefix.to_owned())),
            _ => {
                let count: i64 = self
                    .pool
                    .scalar(
                        query(
                            "SELECT COUNT(*) FROM sessions \
                             WHERE lower(id) LIKE lower(?) ESCAPE '\\'",
                        )
                        .bind(&pattern),
                    )
                    .await?;
                Err(StoreError::Ambiguous {
                    prefix: prefix.to_owned(),
                    count: usize::try_from(count).unwrap_or(usize::MAX),
                })
            }
        }
    }

    /// Every session, the most recently changed first.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.pool
            .fetch_all(query(format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY {}",
                self.dialect().newest_sessions_first()
            )))
            .await?
            .iter()
            .map(session_from_row)
            .collect()
    }

    /// The most recently changed session (`None` when there is none).
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn latest_session(&self) -> Result<Option<SessionRecord>, StoreError> {
        let row = self
            .pool
            .fetch_optional(query(format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY {} LIMIT 1",
                self.dialect().newest_sessions_first()
            )))
            .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    /// Deletes the session with its runs, events and messages. Returns whether it existed.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let done = self
            .pool
            .execute(query("DELETE FROM sessions WHERE id = ?").bind(id))
            .await?;
        Ok(done > 0)
    }

    /// Sets the session's state.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn set_state(&self, id: &str, state: SessionState) -> Result<(), StoreError> {
        self.set_column(id, "state", state.as_str().to_owned())
            .await
    }

    /// Replaces the session's settings (overrides).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn set_settings(&self, id: &str, settings: &Value) -> Result<(), StoreError> {
        self.set_column(id, "settings", settings.to_string()).await
    }

    /// Changes what the session runs (an agent kind, or `flow`): the next process to continue
    /// it builds that, with the conversation kept.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn set_agent(&self, id: &str, agent: &str) -> Result<(), StoreError> {
        self.set_column(id, "agent", agent.to_owned()).await
    }

    /// Sets one column of the session's row (and its `updated_at`).
    async fn set_column(
        &self,
        id: &str,
        column: &'static str,
        value: String,
    ) -> Result<(), StoreError> {
        let done = self
            .pool
            .execute(
                query(format!(
                    "UPDATE sessions SET {column} = ?, updated_at = {} WHERE id = ?",
                    self.dialect().touched()
                ))
                .bind(value)
                .bind(now_ms())
                .bind(id),
            )
            .await?;
        if done == 0 {
            return Err(StoreError::NoSession(id.to_owned()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_line_and_short() {
        assert_eq!(title_of("  write\n the  report "), "write the report");
        let long = "x".repeat(200);
        let title = title_of(&long);
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with('…'));
    }
}
