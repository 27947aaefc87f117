//! Sessions: create, read, list, delete, change state.

use std::path::PathBuf;

use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

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

pub(crate) fn session_from_row(row: &SqliteRow) -> Result<SessionRecord, StoreError> {
    let settings: String = row.try_get("settings")?;
    let state: String = row.try_get("state")?;
    let workspace: String = row.try_get("workspace")?;
    Ok(SessionRecord {
        id: row.try_get("id")?,
        agent: row.try_get("agent")?,
        settings: serde_json::from_str(&settings)
            .map_err(|e| StoreError::corrupt("session settings", e))?,
        workspace: PathBuf::from(workspace),
        state: state.parse()?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        runs: row.try_get("runs")?,
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
        sqlx::query(concat!(
            "INSERT INTO sessions (id, agent, settings, workspace, state, title, created_at, \
             updated_at) VALUES (?, ?, ?, ?, 'idle', '', ?, ",
            touched!(),
            ")"
        ))
        .bind(&id)
        .bind(&new.agent)
        .bind(settings)
        .bind(new.workspace.to_string_lossy().into_owned())
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        self.session(&id).await
    }

    /// The session `id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
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
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2"
        ))
        .bind(&pattern)
        .fetch_all(&self.pool)
        .await?;
        match rows.as_slice() {
            [row] => session_from_row(row),
            [] => Err(StoreError::NoSession(prefix.to_owned())),
            _ => {
                let count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'")
                        .bind(&pattern)
                        .fetch_one(&self.pool)
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
        sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, rowid DESC"
        ))
        .fetch_all(&self.pool)
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
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, rowid DESC LIMIT 1"
        ))
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    /// Deletes the session with its runs, events and messages. Returns whether it existed.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Sets the session's state.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn set_state(&self, id: &str, state: SessionState) -> Result<(), StoreError> {
        let done = sqlx::query(concat!(
            "UPDATE sessions SET state = ?, updated_at = ",
            touched!(),
            " WHERE id = ?"
        ))
        .bind(state.as_str())
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NoSession(id.to_owned()));
        }
        Ok(())
    }

    /// Replaces the session's settings (overrides).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], or a database error.
    pub async fn set_settings(&self, id: &str, settings: &Value) -> Result<(), StoreError> {
        let done = sqlx::query(concat!(
            "UPDATE sessions SET settings = ?, updated_at = ",
            touched!(),
            " WHERE id = ?"
        ))
        .bind(settings.to_string())
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
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
