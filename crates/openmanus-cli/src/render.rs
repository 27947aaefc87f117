//! Live rendering of an agent's events: readable text on the terminal (colours and a spinner
//! only on a TTY), or JSON lines for other programs.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_core::AgentEvent;
use agent_session::Session;
use agents::FlowEvent;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

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

/// `1200 in (800 cached), 50 out · $0.0031`: tokens, and the cost when it is known.
pub fn usage_line(prompt: u64, cached: u64, completion: u64, cost_usd: Option<f64>) -> String {
    let mut line = format!("{prompt} in");
    if cached > 0 {
        line.push_str(&format!(" ({cached} cached)"));
    }
    line.push_str(&format!(", {completion} out"));
    if let Some(cost) = cost_usd {
        line.push_str(&format!(" · ${cost:.4}"));
    }
    line
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

/// The state of one live view: style and spinner flag.
struct Renderer {
    mode: Mode,
    style: Style,
    tty: bool,
    thinking: Arc<AtomicBool>,
    spinner: Option<JoinHandle<()>>,
}

impl Renderer {
    fn new(mode: Mode) -> Self {
        let tty = std::io::stderr().is_terminal();
        let thinking = Arc::new(AtomicBool::new(false));
        let spinner = (tty && mode == Mode::Text).then(|| spawn_spinner(thinking.clone()));
        Self {
            mode,
            style: Style {
                colour: tty && std::env::var_os("NO_COLOR").is_none(),
            },
            tty,
            thinking,
            spinner,
        }
    }

    /// Shows one agent event.
    fn agent(&mut self, event: &AgentEvent) {
        self.thinking.store(
            matches!(event, AgentEvent::StepStarted { .. }),
            Ordering::SeqCst,
        );
        if self.tty && self.mode == Mode::Text {
            clear_line();
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

    /// Shows one flow event.
    fn flow(&mut self, event: &FlowEvent) {
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

    fn finish(self) {
        self.thinking.store(false, Ordering::SeqCst);
        if let Some(spinner) = self.spinner {
            spinner.abort();
            clear_line();
        }
    }
}

/// The live view of one run: the session's agent events and, for a flow, its flow events.
pub struct Live {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Live {
    /// Starts showing the events of `session` from now on.
    pub fn start(session: &Session, mode: Mode) -> Self {
        let mut events = session.events().subscribe();
        let mut flow = session.flow_events();
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut renderer = Renderer::new(mode);
            loop {
                tokio::select! {
                    biased;
                    Some(event) = events.recv() => renderer.agent(&event),
                    Some(event) = flow.recv() => {
                        // Everything an executor did before this flow event was sent before
                        // it; a step that starts has nothing of its own queued yet.
                        if !matches!(event, FlowEvent::StepStarted { .. }) {
                            while let Ok(earlier) = events.try_recv() {
                                renderer.agent(&earlier);
                            }
                        }
                        renderer.flow(&event);
                    }
                    _ = &mut stopped => {
                        while let Ok(event) = events.try_recv() {
                            renderer.agent(&event);
                        }
                        while let Ok(event) = flow.try_recv() {
                            renderer.flow(&event);
                        }
                        break;
                    }
                }
            }
            renderer.finish();
        });
        Self { stop, task }
    }

    /// Shows what is still queued of the run (it has returned) and stops.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
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
            cached_prompt_tokens,
            completion_tokens,
            cost_usd,
        } => {
            err(&style.dim(&format!(
                "  tokens: {}",
                usage_line(
                    *prompt_tokens,
                    *cached_prompt_tokens,
                    *completion_tokens,
                    *cost_usd
                )
            )));
        }
        AgentEvent::Compacted {
            strategy,
            removed_messages,
            tokens_before,
            tokens_after,
            ..
        } => {
            err(&style.yellow(&format!(
                "  ⇣ compacted the conversation ({strategy}): {removed_messages} messages replaced, \
                 ~{tokens_before} → ~{tokens_after} tokens (saved ~{})",
                tokens_before.saturating_sub(*tokens_after)
            )));
        }
        AgentEvent::Finished {
            status,
            steps,
            usage,
        } => {
            err(&style.bold(&format!("■ {status} after {steps} step(s)")));
            if usage.total_tokens() > 0 {
                let cost = (usage.unpriced_calls == 0).then_some(usage.cost_usd);
                err(&style.dim(&format!(
                    "  run total: {}",
                    usage_line(
                        usage.prompt_tokens,
                        usage.cached_prompt_tokens,
                        usage.completion_tokens,
                        cost
                    )
                )));
            }
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

    #[test]
    fn usage_lines_show_cache_and_cost_only_when_known() {
        assert_eq!(usage_line(1200, 0, 50, None), "1200 in, 50 out");
        assert_eq!(
            usage_line(1200, 800, 50, Some(0.003_14)),
            "1200 in (800 cached), 50 out · $0.0031"
        );
    }
}
