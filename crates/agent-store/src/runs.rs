//! Runs: begun, finished, and the ones a dead process left running.

use std::collections::HashSet;

use serde_json::{Value, json};
use tracing::info;

use crate::db::{Pool, Row, query};
use crate::error::StoreError;
use crate::owner;
use crate::script::Script;
use crate::sessions::title_of;
use crate::store::Store;
use crate::texts::{TextCache, Texts, keys_in};
use crate::types::{
    EventKind, NewEvent, RunId, RunRecord, RunState, RunSummary, StoredEvent, TokenUsage, now_ms,
};

const RUN_COLUMNS: &str = "id, session_id, task, state, status, answer, text, text_parts, \
    changes, prompt_tokens, cached_prompt_tokens, completion_tokens, cost_usd, started_at, \
    finished_at";

/// The texts the rows' `text_parts` refer to.
async fn texts_of_runs(pool: &Pool, rows: &[Row]) -> Result<Texts, StoreError> {
    let mut keys = HashSet::new();
    let mut session = None;
    for row in rows {
        let parts: Option<String> = row.get("text_parts")?;
        if let Some(parts) = parts {
            keys_in(&parts, &mut keys);
            session = Some(row.get::<String>("session_id")?);
        }
    }
    match session {
        Some(session) if !keys.is_empty() => Texts::load(pool, &session, keys).await,
        _ => Ok(Texts::default()),
    }
}

/// The result text of a run's row: its parts put together, or `text` as stored.
fn text_of(row: &Row, texts: &Texts) -> Result<Option<String>, StoreError> {
    let parts: Option<String> = row.get("text_parts")?;
    let Some(parts) = parts else {
        return Ok(row.get("text")?);
    };
    let parts: Vec<String> = serde_json::from_str(&texts.decode(&parts)?)
        .map_err(|e| StoreError::corrupt("run text", e))?;
    Ok(Some(parts.concat()))
}

fn run_from_row(row: &Row, texts: &Texts) -> Result<RunRecord, StoreError> {
    let state: String = row.get("state")?;
    let changes: Option<String> = row.get("changes")?;
    let tokens = |column: &str| -> Result<u64, StoreError> {
        let n: i64 = row.get(column)?;
        Ok(u64::try_from(n).unwrap_or_default())
    };
    Ok(RunRecord {
        id: row.get("id")?,
        session_id: row.get("session_id")?,
        task: row.get("task")?,
        state: state.parse()?,
        status: row.get("status")?,
        answer: row.get("answer")?,
        text: text_of(row, texts)?,
        changes: match changes {
            Some(text) => {
                serde_json::from_str(&text).map_err(|e| StoreError::corrupt("run changes", e))?
            }
            None => Value::Null,
        },
        usage: TokenUsage {
            prompt_tokens: tokens("prompt_tokens")?,
            cached_prompt_tokens: tokens("cached_prompt_tokens")?,
            completion_tokens: tokens("completion_tokens")?,
            cost_usd: row.get("cost_usd")?,
            ..TokenUsage::default()
        },
        started_at: row.get("started_at")?,
        finished_at: row.get("finished_at")?,
    })
}

/// Whether the process running a run (`owner`, its lease `lease_until`) is alive at `now`.
fn is_alive(owner: &str, lease_until: Option<i64>, now: i64) -> bool {
    match owner::liveness(owner) {
        owner::Liveness::Alive => true,
        owner::Liveness::Dead => false,
        // No lease: a store of one host whose file moved, or a run from before a reboot.
        owner::Liveness::Elsewhere => lease_until.is_some_and(|until| until > now),
    }
}

/// A lease taken or renewed at `now`.
fn lease_from(now: i64) -> i64 {
    now.saturating_add(i64::try_from(owner::LEASE.as_millis()).unwrap_or(i64::MAX))
}

/// The `run_finished` event's data.
fn finished_data(run: RunId, summary: &RunSummary) -> Value {
    json!({
        "run_id": run,
        "state": summary.state,
        "status": summary.status,
        "answer": summary.answer,
        "usage": summary.usage,
        "changes": summary.changes,
    })
}

impl Store {
    /// Begins a run of `task` in the session, owned by this process: the session becomes
    /// `running` (and takes the task as its title if it has none), and a `run_started` event is
    /// stored, all in one transaction. Returns the run's id and that event.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSession`], [`StoreError::Running`] when a live process (this one or
    /// another sharing the store) has a run of the session going, or a database error.
    pub async fn begin_run(
        &self,
        session: &str,
        task: &str,
    ) -> Result<(RunId, StoredEvent), StoreError> {
        let now = now_ms();
        let mut tx = self.write().await?;
        let updated = tx
            .execute(
                query(format!(
                    "UPDATE sessions SET state = 'running', updated_at = {}, \
                     title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                    self.dialect().touched()
                ))
                .bind(now)
                .bind(title_of(task))
                .bind(session),
            )
            .await?;
        if updated == 0 {
            return Err(StoreError::NoSession(session.to_owned()));
        }
        // One run at a time, across every process sharing the store: the update above holds
        // the session's row (or, on SQLite, the write lock) until this transaction ends, so a
        // run begun meanwhile elsewhere is seen here. A run of a dead process is no obstacle
        // (it is marked interrupted at the next open or resume).
        let running = tx
            .fetch_all(
                query(
                    "SELECT id, owner, lease_until FROM runs \
                     WHERE session_id = ? AND state = 'running'",
                )
                .bind(session),
            )
            .await?;
        for row in running {
            if is_alive(&row.get::<String>("owner")?, row.get("lease_until")?, now) {
                return Err(StoreError::Running {
                    session: session.to_owned(),
                    run: row.get("id")?,
                });
            }
        }
        // A store shared by several hosts: the run's lease, renewed while it runs.
        let lease = self.is_shared().then(|| lease_from(now));
        let run: RunId = tx
            .scalar(
                query(
                    "INSERT INTO runs (session_id, task, state, owner, started_at, lease_until) \
                     VALUES (?, ?, 'running', ?, ?, ?) RETURNING id",
                )
                .bind(session)
                .bind(task)
                .bind(owner::this_process())
                .bind(now)
                .bind(lease),
            )
            .await?;
        let event = NewEvent {
            run_id: Some(run),
            at: now,
            kind: EventKind::RunStarted,
            data: json!({ "run_id": run, "task": task }).into(),
        };
        let stored = crate::events::insert_event(&mut tx, session, event).await?;
        tx.commit().await?;
        if lease.is_some() {
            self.keep_leases();
        }
        Ok((run, stored))
    }

    /// Ends a run with `summary`: the run's outcome, answer, text, changes and usage, the
    /// session's state, and a `run_finished` event, in one transaction. Returns that event.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoRun`], or a database error.
    pub async fn finish_run(
        &self,
        run: RunId,
        summary: &RunSummary,
    ) -> Result<StoredEvent, StoreError> {
        let now = now_ms();
        let mut tx = self.write().await?;
        // Parts that do not make up the text are not used: the text is what the run said.
        let parts = summary
            .text_parts
            .as_ref()
            .filter(|parts| parts.concat() == summary.text);
        let (text, parts) = match parts {
            Some(parts) => {
                let session: Option<String> = tx
                    .scalar_optional(query("SELECT session_id FROM runs WHERE id = ?").bind(run))
                    .await?;
                let session = session.ok_or(StoreError::NoRun(run))?;
                let mut script = Script::default();
                let json =
                    serde_json::to_string(parts).map_err(|e| StoreError::corrupt("run text", e))?;
                let parts = TextCache::default().encode(&json, &session, &mut script)?;
                script.execute_in(&mut tx).await?;
                (None, Some(parts))
            }
            None => (Some(summary.text.as_str()), None),
        };
        let session: Option<String> = tx
            .scalar_optional(
                query(
                    "UPDATE runs SET state = ?, status = ?, answer = ?, text = ?, \
                     text_parts = ?, changes = ?, prompt_tokens = ?, cached_prompt_tokens = ?, \
                     completion_tokens = ?, cost_usd = ?, finished_at = ? WHERE id = ? \
                     RETURNING session_id",
                )
                .bind(summary.state.as_str())
                .bind(&summary.status)
                .bind(&summary.answer)
                .bind(text)
                .bind(parts)
                .bind((!summary.changes.is_null()).then(|| summary.changes.to_string()))
                .bind(i64::try_from(summary.usage.prompt_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(summary.usage.cached_prompt_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(summary.usage.completion_tokens).unwrap_or(i64::MAX))
                .bind(summary.usage.cost_usd)
                .bind(now)
                .bind(run),
            )
            .await?;
        let session = session.ok_or(StoreError::NoRun(run))?;
        tx.execute(
            query(format!(
                "UPDATE sessions SET state = ?, updated_at = {} WHERE id = ?",
                self.dialect().touched()
            ))
            .bind(summary.state.session_state().as_str())
            .bind(now)
            .bind(&session),
        )
        .await?;
        let event = NewEvent {
            run_id: Some(run),
            at: now,
            kind: EventKind::RunFinished,
            data: finished_data(run, summary).into(),
        };
        let stored = crate::events::insert_event(&mut tx, &session, event).await?;
        tx.commit().await?;
        Ok(stored)
    }

    /// The run `id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoRun`], or a database error.
    pub async fn run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        let row = self
            .pool
            .fetch_optional(query(format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?")).bind(id))
            .await?
            .ok_or(StoreError::NoRun(id))?;
        let texts = texts_of_runs(&self.pool, std::slice::from_ref(&row)).await?;
        run_from_row(&row, &texts)
    }

    /// The session's runs, oldest first.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn runs(&self, session: &str) -> Result<Vec<RunRecord>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                query(format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE session_id = ? ORDER BY id"
                ))
                .bind(session),
            )
            .await?;
        let texts = texts_of_runs(&self.pool, &rows).await?;
        rows.iter().map(|row| run_from_row(row, &texts)).collect()
    }

    /// Marks every `running` run whose process is gone (killed, crashed, or ended without
    /// finishing it) as `interrupted`, with a `run_finished` event, and its session as
    /// `interrupted`. Runs of live processes (this one included) are left alone; a run of
    /// another host sharing the store is taken for gone once its lease ran out (its process
    /// renews it every 10 s while it runs, for 30 s). [`Store::open`]
    /// calls it; call it again whenever you like. Returns the runs it marked.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn mark_interrupted_runs(&self) -> Result<Vec<RunId>, StoreError> {
        let running = self
            .pool
            .fetch_all(query(
                "SELECT id, owner, lease_until FROM runs WHERE state = 'running'",
            ))
            .await?;
        let mut marked = Vec::new();
        for row in running {
            let id: RunId = row.get("id")?;
            let owner: String = row.get("owner")?;
            if is_alive(&owner, row.get("lease_until")?, now_ms()) {
                continue;
            }
            let summary = RunSummary {
                state: RunState::Interrupted,
                status: "interrupted: its process ended in the middle of the run".to_owned(),
                answer: None,
                text: String::new(),
                text_parts: None,
                changes: Value::Null,
                usage: self.usage_of(id).await?,
            };
            // Another process may have marked it meanwhile: only a run still running is.
            let still: i64 = self
                .pool
                .scalar(
                    query("SELECT COUNT(*) FROM runs WHERE id = ? AND state = 'running'").bind(id),
                )
                .await?;
            if still == 1 {
                self.finish_run(id, &summary).await?;
                info!(run = id, %owner, "marked a run of a dead process interrupted");
                marked.push(id);
            }
        }
        Ok(marked)
    }

    /// The tokens a run's stored `token_usage` events add up to (added up here: the two
    /// databases read JSON differently, and this runs once per interrupted run).
    async fn usage_of(&self, run: RunId) -> Result<TokenUsage, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                query(
                    "SELECT data FROM events WHERE run_id = ? AND kind = 'agent' \
                     AND data LIKE '%\"token\\_usage\"%' ESCAPE '\\'",
                )
                .bind(run),
            )
            .await?;
        let mut usage = TokenUsage::default();
        for row in rows {
            let data: String = row.get("data")?;
            let Some(call) = serde_json::from_str::<agent_core::AgentEvent>(&data)
                .ok()
                .and_then(|event| event.token_usage())
            else {
                continue;
            };
            // Summed as they are (a cost where one is known), as the store always has.
            usage.prompt_tokens += call.prompt_tokens;
            usage.cached_prompt_tokens += call.cached_prompt_tokens;
            usage.completion_tokens += call.completion_tokens;
            if let Some(cost) = call.cost_usd {
                usage.cost_usd = Some(usage.cost_usd.unwrap_or_default() + cost);
            }
        }
        Ok(usage)
    }

    /// Renews the leases of this process's running runs (see
    /// [`Store::mark_interrupted_runs`]). A shared store does it every 10 s by itself while
    /// this process has a run going; returns how many runs it renewed.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn renew_leases(&self) -> Result<u64, StoreError> {
        Ok(self
            .pool
            .execute(
                query("UPDATE runs SET lease_until = ? WHERE owner = ? AND state = 'running'")
                    .bind(lease_from(now_ms()))
                    .bind(owner::this_process()),
            )
            .await?)
    }

    /// Starts (once per store) the task that renews this process's leases every
    /// [`owner::RENEW_EVERY`], until the store is closed.
    fn keep_leases(&self) {
        if self
            .renewing
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let store = self.clone();
        tokio::spawn(async move {
            let mut failing = false;
            loop {
                tokio::time::sleep(owner::RENEW_EVERY).await;
                match store.renew_leases().await {
                    Ok(_) => failing = false,
                    Err(StoreError::Database(sqlx::Error::PoolClosed)) => return,
                    Err(error) => {
                        if !failing {
                            tracing::warn!(%error, "renewing the leases of this process's runs");
                        }
                        failing = true;
                    }
                }
            }
        });
    }
}
