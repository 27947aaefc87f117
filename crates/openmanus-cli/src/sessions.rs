//! The session store from the command line: opening it for a run, and `openmanus sessions
//! list | show | export | delete` (`resume` runs through `run.rs`).

use std::path::PathBuf;

use agent_session::journal::export_session;
use agent_session::store::{RunRecord, SessionRecord, Store, now_ms};
use agents::AgentFactory;
use anyhow::{Context, Result};
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::output::{EXIT_FAILED, EXIT_OK, note, say};
use crate::render::preview;

/// The store runs of `factory` are recorded in, for messages: the PostgreSQL URL of `[store]
/// url` (its password hidden), else the database file (`[store] path`, else
/// `<workspace>/.openmanus/sessions.db`).
pub fn store_name(factory: &AgentFactory) -> String {
    let settings = &factory.config().store;
    match &settings.url {
        Some(url) => agent_session::store::redacted_url(url),
        None => settings
            .database_path(factory.workspace())
            .display()
            .to_string(),
    }
}

/// Opens the store of `factory`'s configuration: `[store] url` or the file.
async fn connect(factory: &AgentFactory) -> Result<Store, agent_session::store::StoreError> {
    let settings = &factory.config().store;
    match &settings.url {
        Some(url) => Store::connect(url).await,
        None => Store::open(settings.database_path(factory.workspace())).await,
    }
}

/// The store runs are recorded in, unless `--no-store` or `[store] enabled = false` turn it off.
/// A store that cannot be opened is reported and the run goes on unrecorded.
pub async fn for_run(global: &GlobalArgs, factory: &AgentFactory) -> Option<Store> {
    if global.no_store || !factory.config().store.enabled {
        return None;
    }
    match connect(factory).await {
        Ok(store) => Some(store),
        Err(error) => {
            note(&format!(
                "warning: the run is not recorded: cannot open the session store {}: {error}",
                store_name(factory)
            ));
            None
        }
    }
}

/// The store, for the `sessions` commands (an error when it is turned off or cannot be opened).
///
/// # Errors
///
/// The store is off, or cannot be opened.
pub async fn open(global: &GlobalArgs, factory: &AgentFactory) -> Result<Store> {
    if global.no_store || !factory.config().store.enabled {
        anyhow::bail!(
            "the session store is turned off (--no-store, or [store] enabled = false in {})",
            factory.config().source()
        );
    }
    connect(factory)
        .await
        .with_context(|| format!("cannot open the session store {}", store_name(factory)))
}

/// How long ago `ms` was, in a few characters.
fn ago(ms: i64) -> String {
    let secs = (now_ms() - ms).max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// `openmanus sessions list`.
///
/// # Errors
///
/// The store cannot be read.
pub async fn list(global: &GlobalArgs, store: &Store) -> Result<u8> {
    let sessions = store.list_sessions().await?;
    if global.json {
        for session in &sessions {
            say(&serde_json::to_string(session)?);
        }
        return Ok(EXIT_OK);
    }
    if sessions.is_empty() {
        note(&format!(
            "no sessions recorded in {} yet",
            store
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
        return Ok(EXIT_OK);
    }
    say(&format!(
        "{:<8}  {:<13}  {:<11}  {:>4}  {:<8}  TITLE",
        "ID", "AGENT", "STATE", "RUNS", "UPDATED"
    ));
    for session in &sessions {
        say(&format!(
            "{:<8}  {:<13}  {:<11}  {:>4}  {:<8}  {}",
            short(&session.id),
            session.agent,
            session.state,
            session.runs,
            ago(session.updated_at),
            session.title
        ));
    }
    if !global.quiet {
        note(
            "\n(resume one with `openmanus sessions resume ID \"next task\"`; the first characters of an id are enough)",
        );
    }
    Ok(EXIT_OK)
}

/// The first characters of an id, as `list` shows them.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `openmanus sessions show ID`.
///
/// # Errors
///
/// No such session; the store cannot be read.
pub async fn show(global: &GlobalArgs, store: &Store, id: &str) -> Result<u8> {
    let session = store.find_session(id).await?;
    let runs = store.runs(&session.id).await?;
    let messages = store.messages(&session.id).await?.len();
    let events = store.event_count(&session.id).await?;
    if global.json {
        say(
            &json!({"session": session, "runs": runs, "messages": messages, "events": events})
                .to_string(),
        );
        return Ok(EXIT_OK);
    }
    show_text(&session, &runs, messages, events);
    Ok(EXIT_OK)
}

fn show_text(session: &SessionRecord, runs: &[RunRecord], messages: usize, events: u64) {
    say(&format!("session:   {}", session.id));
    say(&format!("agent:     {}", session.agent));
    say(&format!("workspace: {}", session.workspace.display()));
    say(&format!("state:     {}", session.state));
    say(&format!(
        "updated:   {} (created {})",
        ago(session.updated_at),
        ago(session.created_at)
    ));
    if session.settings.as_object().is_some_and(|s| !s.is_empty()) {
        say(&format!("settings:  {}", session.settings));
    }
    say(&format!(
        "memory:    {messages} messages; {events} events recorded"
    ));
    for (n, run) in runs.iter().enumerate() {
        say("");
        say(&format!(
            "run {} ({}): {}",
            n + 1,
            run.state,
            preview(&run.task, 3, 300)
        ));
        if let Some(status) = &run.status {
            say(&format!("  outcome: {status}"));
        }
        if run.usage.total_tokens() > 0 {
            say(&format!(
                "  tokens:  {}",
                crate::render::usage_line(
                    run.usage.prompt_tokens,
                    run.usage.cached_prompt_tokens,
                    run.usage.completion_tokens,
                    run.usage.cost_usd
                )
            ));
        }
        if let Some(answer) = &run.answer {
            say(&format!("  answer:  {}", preview(answer, 6, 600)));
        }
    }
}

/// `openmanus sessions export ID [--output FILE]`.
///
/// # Errors
///
/// No such session; the store cannot be read; the file cannot be written.
pub async fn export(
    global: &GlobalArgs,
    store: &Store,
    id: &str,
    output: Option<PathBuf>,
) -> Result<u8> {
    let session = store.find_session(id).await?;
    let lines = match &output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            export_session(store, &session.id, std::io::BufWriter::new(file)).await?
        }
        None => export_session(store, &session.id, std::io::stdout().lock()).await?,
    };
    // On standard output the journal is JSON lines already; a file gets a line saying so.
    if let Some(path) = output {
        if global.json {
            say(
                &json!({"type": "exported", "session_id": session.id, "path": path,
                        "lines": lines})
                .to_string(),
            );
        } else {
            note(&format!("{lines} lines written to {}", path.display()));
        }
    }
    Ok(EXIT_OK)
}

/// `openmanus sessions delete ID`.
///
/// # Errors
///
/// No such session; the store cannot be written.
pub async fn delete(global: &GlobalArgs, store: &Store, id: &str) -> Result<u8> {
    let session = store.find_session(id).await?;
    if store.delete_session(&session.id).await? {
        if global.json {
            say(&json!({"type": "deleted", "session_id": session.id}).to_string());
        } else {
            note(&format!("deleted session {}", session.id));
        }
        Ok(EXIT_OK)
    } else {
        Ok(EXIT_FAILED)
    }
}
