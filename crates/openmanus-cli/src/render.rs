//! Live rendering of an agent's events: readable text on the terminal (colours and a spinner
//! only on a TTY), or JSON lines for other programs.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_core::AgentEvent;
use agents::FlowEvent;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use agent_session::JournalHandle;

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Steps, thoughts, tool calls and short observations.
    Text,
    /// Only the final answer.
    Quiet,
    /// Every event as a JSON line on standard output.
    Json,
}

/// Totals gathered while rendering.
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    /// Input tokens over the run.
    pub prompt_tokens: u64,
    /// Output tokens over the run.
    pub completion_tokens: u64,
}

struct Style {
    colour: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }
    fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }
    fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }
    fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }
}

/// The first `max` characters of the first lines of `text`, on at most `lines` lines.
pub fn preview(text: &str, lines: usize, max: usize) -> String {
    let mut out: Vec<String> = text.lines().take(lines).map(str::to_owned).collect();
    let total_lines = text.lines().count();
    let mut shown: String = out.join("\n");
    if shown.chars().count() > max {
        shown = shown.chars().take(max).collect::<String>() + "…";
        out.clear();
    }
    if total_lines > lines && out.len() == lines {
        shown.push_str(&format!("\n… ({} more lines)", total_lines - lines));
    }
    shown
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The state of one live view: style, spinner flag, token totals.
struct Renderer {
    mode: Mode,
    journal: JournalHandle,
    style: Style,
    tty: bool,
    thinking: Arc<AtomicBool>,
    spinner: Option<JoinHandle<()>>,
    totals: Totals,
}

impl Renderer {
    fn new(mode: Mode, journal: JournalHandle) -> Self {
        let tty = std::io::stderr().is_terminal();
        let thinking = Arc::new(AtomicBool::new(false));
        let spinner = (tty && mode == Mode::Text).then(|| spawn_spinner(thinking.clone()));
        Self {
            mode,
            journal,
            style: Style {
                colour: tty && std::env::var_os("NO_COLOR").is_none(),
            },
            tty,
            thinking,
            spinner,
            totals: Totals::default(),
        }
    }

    /// Journals and shows one agent event.
    fn agent(&mut self, event: &AgentEvent) {
        self.journal.event(event);
        self.thinking.store(
            matches!(event, AgentEvent::StepStarted { .. }),
            Ordering::SeqCst,
        );
        if self.tty && self.mode == Mode::Text {
            clear_line();
        }
        if let AgentEvent::TokenUsage {
            prompt_tokens,
            completion_tokens,
        } = event
        {
            self.totals.prompt_tokens += prompt_tokens;
            self.totals.completion_tokens += completion_tokens;
        }
        match self.mode {
            Mode::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    out(&line);
                }
            }
            Mode::Text => text(&self.style, event),
            Mode::Quiet => {}
        }
    }

    /// Journals and shows one flow event.
    fn flow(&mut self, event: &FlowEvent) {
        self.journal.write("flow_event", json!({ "event": event }));
        self.thinking.store(false, Ordering::SeqCst);
        if self.tty && self.mode == Mode::Text {
            clear_line();
        }
        match self.mode {
            Mode::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    out(&line);
                }
            }
            Mode::Text => flow_text(&self.style, event),
            Mode::Quiet => {}
        }
    }

    fn finish(self) -> Totals {
        self.thinking.store(false, Ordering::SeqCst);
        if let Some(spinner) = self.spinner {
            spinner.abort();
            clear_line();
        }
        self.totals
    }
}

/// Renders events until the run's `Finished` event (or the channel closes), also writing each
/// one to the journal. Returns the token totals.
pub fn spawn(
    mut events: UnboundedReceiver<AgentEvent>,
    mode: Mode,
    journal: JournalHandle,
) -> JoinHandle<Totals> {
    tokio::spawn(async move {
        let mut renderer = Renderer::new(mode, journal);
        while let Some(event) = events.recv().await {
            renderer.agent(&event);
            if matches!(event, AgentEvent::Finished { .. }) {
                break;
            }
        }
        renderer.finish()
    })
}

/// Renders a planning flow: its own events (`flow`) and those of its executors (`events`, one
/// bus every executor shares), journaling each, until both channels close (drop the flow).
/// Executor events emitted before a flow event are shown before it, so a step's tool calls
/// never appear after the line that says the step finished. Returns the token totals.
pub fn spawn_flow(
    mut events: UnboundedReceiver<AgentEvent>,
    mut flow: UnboundedReceiver<FlowEvent>,
    mode: Mode,
    journal: JournalHandle,
) -> JoinHandle<Totals> {
    tokio::spawn(async move {
        let mut renderer = Renderer::new(mode, journal);
        let mut agents_open = true;
        let mut flow_open = true;
        while agents_open || flow_open {
            tokio::select! {
                biased;
                event = events.recv(), if agents_open => match event {
                    Some(event) => renderer.agent(&event),
                    None => agents_open = false,
                },
                event = flow.recv(), if flow_open => match event {
                    Some(event) => {
                        // Everything an executor did before this flow event was sent before
                        // it; a step that starts has nothing of its own queued yet.
                        if !matches!(event, FlowEvent::StepStarted { .. }) {
                            while let Ok(earlier) = events.try_recv() {
                                renderer.agent(&earlier);
                            }
                        }
                        renderer.flow(&event);
                    }
                    None => flow_open = false,
                },
            }
        }
        renderer.finish()
    })
}

fn flow_text(style: &Style, event: &FlowEvent) {
    match event {
        FlowEvent::PlanCreated { plan, .. } => {
            err(&style.bold(&format!("◆ plan\n{}", plan.format())));
        }
        FlowEvent::StepStarted {
            index,
            text,
            executor,
            attempt,
        } => {
            err(&style.bold(&format!(
                "◆ step {index} ({executor}, attempt {attempt}): {text}"
            )));
        }
        FlowEvent::StepFinished {
            index,
            status,
            run_status,
            note: step_note,
            ..
        } => {
            let detail = step_note
                .as_deref()
                .map(|n| format!(" — {n}"))
                .unwrap_or_default();
            err(&style.bold(&format!(
                "◆ step {index}: {} ({run_status}){detail}",
                status.as_str()
            )));
        }
        FlowEvent::Finished {
            completed,
            blocked,
            timed_out,
            cancelled,
        } => {
            err(&style.bold(&format!(
                "◆ flow finished: {completed} completed, {blocked} blocked{}{}",
                if *timed_out { ", timed out" } else { "" },
                if *cancelled { ", cancelled" } else { "" }
            )));
        }
        _ => {}
    }
}

#[allow(clippy::print_stdout)]
fn out(line: &str) {
    println!("{line}");
}

#[allow(clippy::print_stderr)]
fn err(line: &str) {
    eprintln!("{line}");
}

fn clear_line() {
    let mut stderr = std::io::stderr();
    let _ = stderr.write_all(b"\r\x1b[2K");
    let _ = stderr.flush();
}

fn spawn_spinner(thinking: Arc<AtomicBool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let mut frame = 0;
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        loop {
            ticker.tick().await;
            if thinking.load(Ordering::SeqCst) {
                let mut stderr = std::io::stderr();
                let _ = write!(
                    stderr,
                    "\r\x1b[2K{} waiting for the model…",
                    FRAMES[frame % FRAMES.len()]
                );
                let _ = stderr.flush();
                frame += 1;
            }
        }
    })
}

fn text(style: &Style, event: &AgentEvent) {
    match event {
        AgentEvent::RunStarted { agent, .. } => err(&style.bold(&format!("▶ {agent}"))),
        AgentEvent::StepStarted { step, max_steps } => {
            err(&style.dim(&format!("── step {step}/{max_steps}")));
        }
        AgentEvent::Thought { content, .. } if !content.trim().is_empty() => {
            err(&format!(
                "{} {}",
                style.cyan("✨"),
                indent(content.trim(), "   ").trim_start()
            ));
        }
        AgentEvent::ToolCallStarted { call, .. } => {
            err(&format!(
                "{} {}({})",
                style.yellow("🛠"),
                style.bold(&call.function.name),
                preview(&call.function.arguments, 1, 160)
            ));
        }
        AgentEvent::ToolCallFinished {
            observation,
            success,
            ..
        } => {
            let mark = if *success {
                style.green("  ✓")
            } else {
                style.red("  ✗")
            };
            err(&format!(
                "{mark} {}",
                indent(&preview(observation, 6, 600), "    ").trim_start()
            ));
        }
        AgentEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => {
            err(&style.yellow(&format!(
                "  ↻ attempt {attempt} failed ({reason}); retrying in {:.1} s",
                *delay_ms as f64 / 1000.0
            )));
        }
        AgentEvent::Stuck { .. } => {
            err(&style.yellow("  ⚠ the agent is repeating itself; asking it to change approach"));
        }
        AgentEvent::TokenUsage {
            prompt_tokens,
            completion_tokens,
        } => {
            err(&style.dim(&format!(
                "  tokens: {prompt_tokens} in, {completion_tokens} out"
            )));
        }
        AgentEvent::Finished { status, steps } => {
            err(&style.bold(&format!("■ {status} after {steps} step(s)")));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_bounded() {
        assert_eq!(preview("a\nb\nc", 2, 100), "a\nb\n… (1 more lines)");
        assert_eq!(preview("short", 3, 100), "short");
        assert_eq!(preview(&"x".repeat(10), 1, 4), "xxxx…");
    }
}
