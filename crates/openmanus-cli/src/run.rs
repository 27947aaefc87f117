//! Running a [`Session`] from the terminal: one task or, with `-i`, one after another; the live
//! view, Ctrl-C, and the report of each run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_session::store::Store;
use agent_session::{Canceller, Session, Target};
use agents::AgentFactory;
use anyhow::{Context, Result};
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::line_editor::{Input, Prompter, read_task};
use crate::output::{self, EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, Style, note};
use crate::render::{Live, Mode};
use crate::sessions;

/// Ctrl-C for the whole program: while a run is in progress the first press cancels it (tools
/// stop, the journal is closed); at a prompt, or on a second press, every process the run
/// started is killed and the program exits at once with 130.
#[derive(Clone, Default)]
pub struct Interrupts {
    session: Arc<Mutex<Option<Canceller>>>,
}

impl Interrupts {
    /// Installs the handler (once, at start-up).
    pub fn install() -> Self {
        let interrupts = Self::default();
        let session = interrupts.session.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let canceller = session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                if canceller.is_some_and(|c| c.cancel()) {
                    note("\ninterrupted: stopping the run (press Ctrl-C again to exit at once)");
                    continue;
                }
                agent_process::emergency_shutdown();
                note("\ninterrupted");
                std::process::exit(i32::from(EXIT_CANCELLED));
            }
        });
        interrupts
    }

    /// The session whose runs Ctrl-C cancels (`None`: Ctrl-C exits).
    fn watch(&self, canceller: Option<Canceller>) {
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = canceller;
    }
}

/// Reads the whole of standard input as one task (a pipe or a file: `git diff | openmanus`).
pub async fn read_all_stdin() -> Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        use std::io::Read;
        let mut text = String::new();
        std::io::stdin().lock().read_to_string(&mut text)?;
        Ok::<_, std::io::Error>(Some(text.trim().to_owned()))
    })
    .await
    .context("reading the task from standard input")?
    .context("reading the task from standard input")
}

/// The first task of a run that is not interactive: `--prompt` (`-`: standard input), else all
/// of standard input when it is not a terminal, else asked for.
async fn first_task(prompt: Option<String>) -> Result<Option<String>> {
    use std::io::IsTerminal;
    match prompt {
        Some(dash) if dash == "-" => read_all_stdin().await,
        Some(task) => Ok(Some(task)),
        None if !std::io::stdin().is_terminal() => read_all_stdin().await,
        None => read_task("Enter your prompt: ").await,
    }
}

/// The view `--json` and `--quiet` ask for.
pub fn mode(global: &GlobalArgs) -> Mode {
    if global.json {
        Mode::Json
    } else if global.quiet {
        Mode::Quiet
    } else {
        Mode::Text
    }
}

/// What to run and how.
pub struct Job<'a> {
    /// The options every command shares.
    pub global: &'a GlobalArgs,
    /// Ctrl-C.
    pub interrupts: &'a Interrupts,
    /// The agent (or the flow).
    pub target: Target,
    /// The first task (asked for when missing).
    pub prompt: Option<String>,
    /// Ask for another task after each run.
    pub interactive: bool,
    /// Continue this recorded session (`""`: the most recent one) instead of starting one.
    pub resume: Option<String>,
    /// Images attached to the first task (`--image`).
    pub images: Vec<PathBuf>,
}

/// The images of `--image` as messages for the model, each captioned with its file name.
///
/// # Errors
///
/// A file that cannot be read or is not a PNG, JPEG, GIF or WebP image.
fn image_messages(paths: &[PathBuf]) -> Result<Vec<agent_core::Message>> {
    use base64::Engine as _;
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read the image {}", path.display()))?;
            let known = [&b"\x89PNG"[..], &b"\xff\xd8\xff"[..], &b"GIF8"[..]]
                .iter()
                .any(|magic| bytes.starts_with(magic))
                || (bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(&b"WEBP"[..]));
            if !known {
                anyhow::bail!("{} is not a PNG, JPEG, GIF or WebP image", path.display());
            }
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            Ok(agent_core::Message::user_message_with_image(
                format!("Image attached to the task: {name}"),
                base64::engine::general_purpose::STANDARD.encode(bytes),
            ))
        })
        .collect()
}

/// Starts a session of `job.target` with `factory`, runs its tasks, closes it; returns the exit
/// code of the last run.
///
/// # Errors
///
/// The session cannot start (the agent cannot be built), or the journal cannot be written.
pub async fn run(job: Job<'_>, factory: &AgentFactory) -> Result<u8> {
    // Read before anything starts, so a bad path costs nothing.
    let mut images = image_messages(&job.images)?;
    // A single run asks for its task before anything is created, so an empty prompt leaves no
    // journal behind (main.py: a warning, and nothing runs).
    let mut next = if job.interactive {
        job.prompt
    } else {
        let task = first_task(job.prompt).await?;
        match task.filter(|t| !t.trim().is_empty()) {
            Some(task) => Some(task),
            None => {
                note("warning: Empty prompt provided.");
                return Ok(EXIT_OK);
            }
        }
    };
    let store = sessions::for_run(job.global, factory).await;
    let mut session = match (&job.resume, &store) {
        (Some(id), Some(store)) => resume(factory, store, id).await?,
        (Some(_), None) => anyhow::bail!(
            "cannot resume: the session store is turned off (--no-store, or [store] enabled = false)"
        ),
        (None, Some(store)) => Session::start_recorded(factory, job.target, store, json!({}))
            .await
            .context("cannot start the agent")?,
        (None, None) => Session::start(factory, job.target)
            .await
            .context("cannot start the agent")?,
    };
    for warning in session.warnings() {
        note(&format!("warning: {warning}"));
    }
    if job.resume.is_some()
        && let Some(id) = session.session_id()
        && !job.global.json
        && !job.global.quiet
    {
        let messages = session.agent().map_or(0, |agent| agent.base().memory.len());
        note(&format!(
            "resuming session {id} ({}, {messages} messages) in {}",
            session.target(),
            session.workspace().display()
        ));
    }
    let style = match session.target() {
        Target::Flow => Style::Flow,
        Target::Agent(_) => Style::Agent,
    };
    let mut code = EXIT_OK;
    let prompter = job.interactive.then(Prompter::new);
    loop {
        let task = match (next.take(), &prompter) {
            (Some(task), _) => Some(task),
            (None, Some(prompter)) => match prompter.read("\nTask (empty line to quit): ").await? {
                Input::Line(line) => Some(line),
                Input::End => None,
                Input::Interrupted => {
                    note("interrupted");
                    code = EXIT_CANCELLED;
                    None
                }
            },
            (None, None) => None,
        };
        let Some(task) = task.filter(|t| !t.trim().is_empty()) else {
            break;
        };
        let live = Live::start(&session, mode(job.global));
        job.interrupts.watch(Some(session.canceller()));
        let result = session
            .run_with_images(&task, std::mem::take(&mut images))
            .await;
        job.interrupts.watch(None);
        let held_back = live.finish().await;
        code = match result {
            Ok(report) => {
                let saved = save_answer(job.global, &report, style);
                // A thought held back as the answer that turns out not to be it is shown now.
                if let Some(thought) =
                    held_back.filter(|t| t.trim() != report.answer_or_text().trim())
                {
                    note(&format!("✨ {}", thought.trim()));
                }
                output::report(
                    &report,
                    session.workspace(),
                    job.global.json,
                    job.global.quiet,
                    style,
                );
                if saved {
                    output::exit_code(&report)
                } else {
                    EXIT_FAILED
                }
            }
            Err(error) => {
                output::report_error(&anyhow::Error::new(error));
                EXIT_FAILED
            }
        };
        if !job.interactive {
            break;
        }
    }
    let recorded = session.session_id().map(str::to_owned);
    let path = session.close().await.context("writing the run journal")?;
    if let Some(store) = store {
        store.close().await;
    }
    let chatty = !job.global.json && !job.global.quiet;
    if let Some(path) = path
        && chatty
    {
        note(&format!("journal: {}", path.display()));
    }
    if let Some(id) = recorded
        && chatty
    {
        note(&format!("session: {id}"));
    }
    Ok(code)
}

/// Writes the run's answer to `--output-last-message`'s file, if given; whether that went well
/// (a failure is reported).
fn save_answer(global: &GlobalArgs, report: &agent_session::RunReport, style: Style) -> bool {
    let Some(path) = &global.output_last_message else {
        return true;
    };
    let answer = match style {
        Style::Agent => report.answer_or_text(),
        Style::Flow => &report.text,
    };
    match std::fs::write(path, format!("{answer}\n")) {
        Ok(()) => true,
        Err(error) => {
            note(&format!(
                "error: cannot write the answer to {}: {error}",
                path.display()
            ));
            false
        }
    }
}

/// Starts the recorded session `id` again (`""`: the most recent one).
async fn resume(factory: &AgentFactory, store: &Store, id: &str) -> Result<Session> {
    let record = if id.is_empty() {
        store
            .latest_session()
            .await?
            .context("there is no recorded session to resume")?
    } else {
        store.find_session(id).await?
    };
    // The MCP agent needs its server: the stored session does not say which, so it gets the
    // default one (our own tools over stdio), as `openmanus --agent mcp` does.
    let factory = if record.agent == agents::AgentKind::Mcp.as_str() {
        factory.clone().with_mcp_server(crate::mcp::server_config(
            crate::cli::McpConnection::Stdio,
            None,
            None,
            Vec::new(),
        )?)
    } else {
        factory.clone()
    };
    Session::resume(&factory, store, &record.id)
        .await
        .with_context(|| format!("cannot resume session {}", record.id))
}
