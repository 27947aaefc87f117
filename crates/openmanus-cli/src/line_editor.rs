//! The task prompt of `-i`: on a terminal, line editing (arrows, Home/End, Ctrl-W, ...) and a
//! history kept across runs in the per-user data directory (rustyline); from a pipe, plain
//! lines.
//!
//! The editor lives on its own thread: it blocks on the terminal, and the program's runtime has
//! one thread that must keep serving the run's background work meanwhile.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::{Context, Result};
use rustyline::config::{Behavior, Config};
use rustyline::error::ReadlineError;
use rustyline::history::{FileHistory, History};
use rustyline::{DefaultEditor, Editor};
use tokio::sync::oneshot;

/// The environment variable that replaces the history file (`""`: no history file).
pub const HISTORY_ENV: &str = "OPENMANUS_HISTORY";

/// Lines kept in the history file.
const HISTORY_SIZE: usize = 1000;

/// What the user did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A line (maybe empty).
    Line(String),
    /// End of input (Ctrl-D, or the pipe closed).
    End,
    /// Ctrl-C at the prompt.
    Interrupted,
}

type Request = (String, oneshot::Sender<Result<Input, String>>);

/// Reads tasks: through the line editor on a terminal, else line by line.
pub struct Prompter {
    editor: Option<mpsc::Sender<Request>>,
}

impl Prompter {
    /// The prompter for this process: the line editor when standard input is a terminal.
    pub fn new() -> Self {
        if !std::io::stdin().is_terminal() {
            return Self { editor: None };
        }
        match start_editor(history_path()) {
            Ok(tx) => Self { editor: Some(tx) },
            Err(error) => {
                tracing::warn!(%error, "no line editing: cannot start the line editor");
                Self { editor: None }
            }
        }
    }

    /// Asks `question` and reads one line.
    ///
    /// # Errors
    ///
    /// Standard input cannot be read.
    pub async fn read(&self, question: &str) -> Result<Input> {
        let Some(editor) = &self.editor else {
            return Ok(match read_task(question).await? {
                Some(line) => Input::Line(line),
                None => Input::End,
            });
        };
        let (tx, rx) = oneshot::channel();
        editor
            .send((question.to_owned(), tx))
            .map_err(|_| anyhow::anyhow!("the line editor stopped"))?;
        rx.await
            .context("the line editor stopped")?
            .map_err(|e| anyhow::anyhow!("reading the task: {e}"))
    }
}

/// The history file: `$OPENMANUS_HISTORY`, else `$XDG_DATA_HOME/openmanus/history`, else
/// `~/.local/share/openmanus/history`; `None` when none is known or the variable is empty.
pub fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(HISTORY_ENV) {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let absolute = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let data = absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("share")))?;
    Some(data.join("openmanus").join("history"))
}

fn start_editor(history: Option<PathBuf>) -> Result<mpsc::Sender<Request>> {
    let config = Config::builder()
        .behavior(Behavior::PreferTerm)
        .max_history_size(HISTORY_SIZE)
        .context("history size")?
        .auto_add_history(false)
        .build();
    let mut editor: DefaultEditor = Editor::with_config(config).context("the line editor")?;
    if let Some(path) = &history
        && path.is_file()
        && let Err(error) = editor.load_history(path)
    {
        tracing::warn!(path = %path.display(), %error, "cannot read the prompt history");
    }
    let (tx, rx) = mpsc::channel::<Request>();
    std::thread::Builder::new()
        .name("line-editor".into())
        .spawn(move || {
            while let Ok((question, reply)) = rx.recv() {
                let answer = read_line(&mut editor, &question, history.as_deref());
                let _ = reply.send(answer);
            }
        })
        .context("cannot start the line editor's thread")?;
    Ok(tx)
}

fn read_line(
    editor: &mut Editor<(), FileHistory>,
    question: &str,
    history: Option<&Path>,
) -> Result<Input, String> {
    // The question may start with blank lines: print them, keep the prompt to its last line.
    let (before, prompt) = question.rsplit_once('\n').unwrap_or(("", question));
    if !before.is_empty() || question.contains('\n') {
        crate::output::note(before);
    }
    match editor.readline(prompt) {
        Ok(line) => {
            if !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
                if let Some(path) = history {
                    save(editor.history_mut(), path);
                }
            }
            Ok(Input::Line(line.trim().to_owned()))
        }
        Err(ReadlineError::Eof) => Ok(Input::End),
        Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
        Err(error) => Err(error.to_string()),
    }
}

/// Appends the new entry to the history file (created with its directory, private).
fn save(history: &mut FileHistory, path: &Path) {
    if let Some(dir) = path.parent()
        && let Err(error) = std::fs::create_dir_all(dir)
    {
        tracing::warn!(dir = %dir.display(), %error, "cannot create the history directory");
        return;
    }
    if let Err(error) = history.append(path) {
        tracing::warn!(path = %path.display(), %error, "cannot write the prompt history");
    }
}

/// Reads one task from standard input (the terminal, or a pipe).
pub async fn read_task(question: &str) -> Result<Option<String>> {
    let question = question.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{BufRead, Write};
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line)?;
        Ok::<_, std::io::Error>((read > 0).then(|| line.trim().to_owned()))
    })
    .await
    .context("reading the task")?
    .context("reading the task")
}
