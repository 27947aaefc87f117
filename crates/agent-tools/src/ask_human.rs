//! `ask_human`: lets the model ask the person for help.
//!
//! The answer comes from a pluggable [`HumanInput`]. The default, [`TerminalInput`], prompts on the
//! terminal (`Bot: {inquire}` then `You: `, on standard error) without blocking the async runtime, and when standard
//! input is not a terminal it answers at once that no human is available — a server with no
//! terminal never hangs on a question. [`ChannelInput`] routes questions to another task (a web
//! UI, a chat bridge).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

use crate::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const ASK_HUMAN: &str = "ask_human";

/// The observation when nobody can answer.
pub const NO_HUMAN: &str = "No human is available to answer questions in this session. \
Continue with your best judgement, or finish with `terminate` if you cannot go on without an answer.";

const DESCRIPTION: &str = "Ask the human user a question and wait for the answer. Use it only \
when you cannot continue without information or a decision that only the user can give.";

/// Where the answers come from.
#[async_trait]
pub trait HumanInput: Send + Sync {
    /// Asks `inquire` and returns the answer, or `None` when nobody can answer.
    ///
    /// # Errors
    ///
    /// When asking failed (an I/O error, for example).
    async fn ask(&self, inquire: &str) -> Result<Option<String>, ToolError>;

    /// Asks `inquire` with the answers that fit (`choices`, such as `once` / `deny`), for a
    /// front end that can offer them as buttons; the answer is still free text, read by the
    /// asker. By default the choices are left to the question's text and [`HumanInput::ask`]
    /// asks it.
    ///
    /// # Errors
    ///
    /// When asking failed (an I/O error, for example).
    async fn choose(&self, inquire: &str, choices: &[Choice]) -> Result<Option<String>, ToolError> {
        let _ = choices;
        self.ask(inquire).await
    }
}

/// One answer a question offers: what is answered, and how a button shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Choice {
    /// The answer sent back when this is chosen (`once`).
    pub answer: String,
    /// What a button shows (`Allow once`).
    pub label: String,
}

impl Choice {
    /// The choice `label` that answers `answer`.
    pub fn new(answer: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            answer: answer.into(),
            label: label.into(),
        }
    }
}

/// Prompts on the terminal: `Bot: {inquire}\n\nYou: ` on standard error (standard output is
/// left to the program's results, such as a CLI's final answer or JSON lines), then reads one
/// line of standard input, both on tokio's blocking pool. Answers `None` at once when standard input is not a
/// terminal or is closed.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalInput;

#[async_trait]
impl HumanInput for TerminalInput {
    async fn ask(&self, inquire: &str) -> Result<Option<String>, ToolError> {
        if !std::io::stdin().is_terminal() {
            return Ok(None);
        }
        let prompt = format!("Bot: {inquire}\n\nYou: ");
        // Terminal I/O blocks: it runs on the blocking pool, never on the async workers.
        let (read, line) = tokio::task::spawn_blocking(move || {
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(prompt.as_bytes())?;
            stderr.flush()?;
            drop(stderr);
            let mut line = String::new();
            let read = std::io::stdin().lock().read_line(&mut line)?;
            Ok::<_, std::io::Error>((read, line))
        })
        .await
        .map_err(ToolError::execution)?
        .map_err(ToolError::execution)?;
        Ok((read > 0).then(|| line.trim().to_owned()))
    }
}

/// A question waiting for its answer, received from a [`ChannelInput`].
#[derive(Debug)]
pub struct Question {
    /// What the model asked.
    pub inquire: String,
    /// The answers that fit, when the asker offers some (empty for a free question).
    pub choices: Vec<Choice>,
    /// Send the answer here (`None`: nobody can answer).
    pub reply: oneshot::Sender<Option<String>>,
}

/// Routes questions to a receiver elsewhere in the program.
#[derive(Debug, Clone)]
pub struct ChannelInput {
    sender: mpsc::Sender<Question>,
}

impl ChannelInput {
    /// A handler and the receiver its questions arrive on.
    #[must_use]
    pub fn new() -> (Self, mpsc::Receiver<Question>) {
        let (sender, receiver) = mpsc::channel(16);
        (Self { sender }, receiver)
    }
}

#[async_trait]
impl HumanInput for ChannelInput {
    async fn ask(&self, inquire: &str) -> Result<Option<String>, ToolError> {
        self.choose(inquire, &[]).await
    }

    async fn choose(&self, inquire: &str, choices: &[Choice]) -> Result<Option<String>, ToolError> {
        let (reply, answer) = oneshot::channel();
        let question = Question {
            inquire: inquire.to_owned(),
            choices: choices.to_vec(),
            reply,
        };
        if self.sender.send(question).await.is_err() {
            return Ok(None);
        }
        Ok(answer.await.ok().flatten())
    }
}

/// Arguments of `ask_human`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskHumanArgs {
    /// The question for the human.
    pub inquire: String,
}

/// The `ask_human` tool.
#[derive(Clone)]
pub struct AskHuman {
    input: Arc<dyn HumanInput>,
}

impl std::fmt::Debug for AskHuman {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskHuman").finish_non_exhaustive()
    }
}

impl Default for AskHuman {
    fn default() -> Self {
        Self::new()
    }
}

impl AskHuman {
    /// Asks on the terminal ([`TerminalInput`]).
    #[must_use]
    pub fn new() -> Self {
        Self::with_input(TerminalInput)
    }

    /// Asks through `input`.
    pub fn with_input(input: impl HumanInput + 'static) -> Self {
        Self {
            input: Arc::new(input),
        }
    }
}

#[async_trait]
impl TypedTool for AskHuman {
    type Args = AskHumanArgs;

    fn name(&self) -> &str {
        ASK_HUMAN
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: AskHumanArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let answer = tokio::select! {
            answer = self.input.ask(&args.inquire) => answer?,
            () = ctx.cancellation.cancelled() => return Err(ToolError::failure("the question was cancelled")),
        };
        Ok(ToolResult::success(
            answer.unwrap_or_else(|| NO_HUMAN.to_owned()),
        ))
    }
}
