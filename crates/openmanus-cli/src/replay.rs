//! `openmanus replay FILE`: a recorded run run again — each model request answered from the
//! recording, the tools real — and the first step whose tool calls or observations differ.

use std::path::{Path, PathBuf};

use agent_config::Config;
use agent_session::Target;
use agent_session::replay::{self, Recording, ReplayOptions};
use agents::AgentFactory;
use anyhow::{Context, Result};

use crate::cli::GlobalArgs;
use crate::output::{EXIT_DIVERGED, EXIT_OK, note, say};

/// What to replay.
pub struct ReplayArgs {
    /// The journal or exported session.
    pub file: Option<PathBuf>,
    /// A session of the store, instead of a file.
    pub session: Option<String>,
    /// The agent (or `flow`), when the recording does not say.
    pub agent: Option<String>,
}

/// Reads the recording: the file, or the stored session (from the store of the configured
/// workspace, not of the replay's).
async fn recording(args: &ReplayArgs, global: &GlobalArgs, config: &Config) -> Result<Recording> {
    if let Some(file) = &args.file {
        return Recording::from_journal(file)
            .with_context(|| format!("cannot replay {}", file.display()));
    }
    let id = args.session.as_deref().unwrap_or_default();
    let factory = AgentFactory::new(config.clone());
    let store = crate::sessions::open(global, &factory).await?;
    let recording = Recording::from_store(&store, id).await.with_context(|| {
        format!(
            "cannot replay session {id} of {}",
            crate::sessions::store_name(&factory)
        )
    });
    store.close().await;
    recording
}

/// A new, empty directory for the replay's workspace.
fn fresh_workspace() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!(
            "openmanus-replay-{}-{}-{attempt}",
            std::process::id(),
            agent_session::store::now_ms()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot create a workspace in {}", base.display()));
            }
        }
    }
    anyhow::bail!("cannot create a fresh workspace in {}", base.display())
}

/// `openmanus replay`: 0 when the replay matched, [`EXIT_DIVERGED`] when it diverged, 1 when
/// it could not be carried out.
///
/// # Errors
///
/// An unreadable recording or configuration, an agent that cannot be built.
pub async fn replay(global: &GlobalArgs, args: ReplayArgs) -> Result<u8> {
    let config = crate::config::load_for_store_or_defaults(global)?;
    let recording = recording(&args, global, &config).await?;
    let mut options = ReplayOptions::new();
    if let Some(agent) = &args.agent {
        let target: Target = agent.parse().map_err(|e| anyhow::anyhow!("--agent: {e}"))?;
        options = options.target(target);
    }
    let (workspace, fresh) = match &global.workspace {
        Some(dir) => (dir.clone(), false),
        None => (fresh_workspace()?, true),
    };
    let factory = AgentFactory::new(config).with_workspace(&workspace);
    let Some(target) = args
        .agent
        .clone()
        .or_else(|| recording.target().map(|t| t.to_string()))
    else {
        remove(fresh, factory.workspace());
        anyhow::bail!(
            "the recording does not say which agent ran: name it with --agent (manus, swe, ..., or flow)"
        );
    };
    if !global.json && !global.quiet {
        let runs = recording.runs().len();
        let source = if recording.replies_from_thoughts() {
            " (rebuilt from the stored thoughts)"
        } else {
            ""
        };
        note(&format!(
            "replaying {runs} run{} of {target} with {} recorded replies{source} in {}",
            if runs == 1 { "" } else { "s" },
            recording.replies(),
            factory.workspace().display()
        ));
    }
    let result = replay::replay(&factory, &recording, &options).await;
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            remove(fresh, factory.workspace());
            return Err(error).context("cannot replay");
        }
    };
    if global.json {
        let mut value = report.to_json();
        if let serde_json::Value::Object(fields) = &mut value {
            fields.insert("type".into(), "replay".into());
            fields.insert(
                "kept_workspace".into(),
                (!report.matched() || !fresh).into(),
            );
        }
        say(&value.to_string());
    } else {
        say(&report.verdict());
    }
    if report.matched() {
        remove(fresh, factory.workspace());
        Ok(EXIT_OK)
    } else {
        if !global.json && !global.quiet {
            if let Some(journal) = &report.journal {
                note(&format!("replay journal: {}", journal.display()));
            }
            note(&format!("workspace: {}", report.workspace.display()));
        }
        Ok(EXIT_DIVERGED)
    }
}

/// Removes the fresh workspace of a replay that needs no looking into.
fn remove(fresh: bool, workspace: &Path) {
    if fresh && let Err(error) = std::fs::remove_dir_all(workspace) {
        note(&format!(
            "warning: cannot remove the replay's workspace {}: {error}",
            workspace.display()
        ));
    }
}
