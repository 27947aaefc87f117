//! Live rendering of an agent's events: readable text on the terminal (colours and a spinner
//! only on a TTY), or JSON lines for other programs.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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

/// `text` with every control character but the newline and the tab written as an escape
/// (`\0`, `\r`, `\u{1b}`): what a tool or a model returned never drives the terminal (a NUL,
/// a carriage return or an escape sequence in an observation is shown, not obeyed).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let raw = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(raw) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if raw(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first `max` characters of the first lines of `text`, on at most `lines` lines, control
/// characters escaped ([`printable`]).
pub fn preview(text: &str, lines: usize, max: usize) -> String {
    let text = printable(text);
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
    /// The reply streamed so far in this step (the spinner shows its end).
    streamed: Arc<Mutex<String>>,
    /// A thought that may be the final answer (its only call is `terminate`, or it has no
    /// calls): shown when the run goes on, left to the report (which labels the answer) when
    /// the run ends, so the answer is not printed twice.
    pending: Option<String>,
}

impl Renderer {
    fn new(mode: Mode) -> Self {
        let terminal = crate::color::terminal();
        let tty = terminal.animate;
        let thinking = Arc::new(AtomicBool::new(false));
        let streamed = Arc::new(Mutex::new(String::new()));
        let spinner = (tty && mode == Mode::Text)
            .then(|| spawn_spinner(thinking.clone(), streamed.clone(), terminal.colour));
        Self {
            mode,
            style: Style {
                colour: terminal.colour,
            },
            tty,
            thinking,
            spinner,
            streamed,
            pending: None,
        }
    }

    /// Shows one agent event.
    fn agent(&mut self, event: &AgentEvent) {
        if let AgentEvent::TextDelta { text } = event {
            match self.mode {
                Mode::Json => {
                    if let Ok(line) = serde_json::to_string(event) {
                        out(&line);
                    }
                }
                // On a terminal the spinner line shows the reply as it streams in; the
                // thought shows it whole when it is complete.
                Mode::Text => lock(&self.streamed).push_str(text),
                Mode::Quiet => {}
            }
            return;
        }
        lock(&self.streamed).clear();
        self.thinking.store(
            matches!(event, AgentEvent::StepStarted { .. }),
            Ordering::SeqCst,
        );
        if self.tty && self.mode == Mode::Text {
            clear_line(self.style.colour);
        }
        match self.mode {
            Mode::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    out(&line);
                }
            }
            Mode::Text => self.text(event),
            Mode::Quiet => {}
        }
    }

    /// The text view of one event, holding back a thought that may be the answer.
    fn text(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Thought {
                content,
                tool_calls,
                ..
            } if !content.trim().is_empty()
                && tool_calls.iter().all(|c| c.function.name == "terminate") =>
            {
                self.show_pending();
                self.pending = Some(content.clone());
            }
            AgentEvent::StepStarted { .. } | AgentEvent::Thought { .. } => {
                self.show_pending();
                text(&self.style, event);
            }
            _ => text(&self.style, event),
        }
    }

    fn show_pending(&mut self) {
        if let Some(thought) = self.pending.take() {
            show_thought(&self.style, &thought);
        }
    }

    /// Shows one flow event.
    fn flow(&mut self, event: &FlowEvent) {
        self.thinking.store(false, Ordering::SeqCst);
        if self.tty && self.mode == Mode::Text {
            clear_line(self.style.colour);
        }
        match self.mode {
            // A flow's `step_started`, `step_finished` and `finished` are also the names of
            // its agents' events: `"scope": "flow"` tells them apart.
            Mode::Json => {
                if let Ok(mut line) = serde_json::to_value(event) {
                    if let serde_json::Value::Object(fields) = &mut line {
                        fields.insert("scope".to_owned(), "flow".into());
                    }
                    out(&line.to_string());
                }
            }
            Mode::Text => flow_text(&self.style, event),
            Mode::Quiet => {}
        }
    }

    /// Stops the spinner; returns the thought held back as the likely answer.
    fn finish(self) -> Option<String> {
        self.thinking.store(false, Ordering::SeqCst);
        if let Some(spinner) = self.spinner {
            spinner.abort();
            clear_line(self.style.colour);
        }
        self.pending
    }
}

/// The live view of one run: the session's agent events and, for a flow, its flow events.
pub struct Live {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Option<String>>,
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
            renderer.finish()
        });
        Self { stop, task }
    }

    /// Shows what is still queued of the run (it has returned) and stops. Returns the last
    /// thought when it was held back as the likely answer (the text view only).
    pub async fn finish(self) -> Option<String> {
        let _ = self.stop.send(());
        self.task.await.ok().flatten()
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

/// Erases the spinner's line: with an escape code when colours are allowed, else by
/// overwriting it with spaces (no escape codes at all under NO_COLOR or --color never).
fn clear_line(colour: bool) {
    let mut stderr = std::io::stderr();
    if colour {
        let _ = stderr.write_all(b"\r\x1b[2K");
    } else {
        let _ = write!(stderr, "\r{:width$}\r", "", width = SPINNER_WIDTH);
    }
    let _ = stderr.flush();
}

/// The widest spinner line, in characters.
const SPINNER_WIDTH: usize = 64;

/// The characters of streamed text the spinner line shows.
const SPINNER_TEXT: usize = 50;

fn lock(text: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    text.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The last `max` characters of the last line of `text`.
fn tail(text: &str, max: usize) -> String {
    let line = text.trim_end().lines().last().unwrap_or_default();
    let count = line.chars().count();
    if count <= max {
        return line.to_owned();
    }
    let skipped: String = line.chars().skip(count - max).collect();
    format!("…{skipped}")
}

/// One frame of the spinner: the seconds and the end of the streamed text (prose only: a
/// text-mode model's call markup is taken out of the deltas where they are made, in agent-llm).
fn spinner_line(frame: &str, seconds: u64, streamed: &str) -> String {
    // Control characters escaped, like the rest of the live view.
    let text = printable(&tail(streamed, SPINNER_TEXT)).into_owned();
    if text.is_empty() {
        format!("{frame} waiting for the model… {seconds}s")
    } else {
        format!("{frame} {seconds}s  {text}")
    }
}

/// The spinner shown while the model thinks, with the seconds it has been thinking and, when
/// the reply streams, the end of the text received so far.
fn spawn_spinner(
    thinking: Arc<AtomicBool>,
    streamed: Arc<Mutex<String>>,
    colour: bool,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let mut frame = 0;
        let mut since: Option<Instant> = None;
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        loop {
            ticker.tick().await;
            if !thinking.load(Ordering::SeqCst) {
                since = None;
                continue;
            }
            let started = *since.get_or_insert_with(Instant::now);
            let seconds = started.elapsed().as_secs();
            let frame_char = FRAMES[frame % FRAMES.len()];
            let line = spinner_line(frame_char, seconds, &lock(&streamed));
            let mut stderr = std::io::stderr();
            if colour {
                let _ = write!(stderr, "\r\x1b[2K\x1b[2m{line}\x1b[0m");
            } else {
                let _ = write!(stderr, "\r{line:width$}", width = SPINNER_WIDTH);
            }
            let _ = stderr.flush();
            frame += 1;
        }
    })
}

fn show_thought(style: &Style, content: &str) {
    err(&format!(
        "{} {}",
        style.cyan("✨"),
        indent(printable(content.trim()).as_ref(), "   ").trim_start()
    ));
}

fn text(style: &Style, event: &AgentEvent) {
    match event {
        AgentEvent::RunStarted { agent, .. } => err(&style.bold(&format!("▶ {agent}"))),
        AgentEvent::StepStarted { step, max_steps } => {
            err(&style.dim(&format!("── step {step}/{max_steps}")));
        }
        AgentEvent::Thought { content, .. } if !content.trim().is_empty() => {
            show_thought(style, content);
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
    fn the_spinner_shows_the_end_of_the_last_line() {
        assert_eq!(tail("first\nsecond line", 6), "…d line");
        assert_eq!(tail("short\n", 10), "short");
        assert_eq!(tail("", 10), "");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        let observation = "Error: The path /w/a\0b\x1b[2J is bad\r\nnext\tline";
        let shown = preview(observation, 6, 600);
        assert_eq!(
            shown,
            "Error: The path /w/a\\0b\\u{1b}[2J is bad\\r\nnext\tline"
        );
        assert!(matches!(
            printable("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_spinner_line_shows_the_seconds_and_the_end_of_the_text() {
        assert_eq!(
            spinner_line("⠋", 3, "First line.\nI will list the files.\n"),
            "⠋ 3s  I will list the files."
        );
        assert_eq!(spinner_line("⠋", 0, ""), "⠋ waiting for the model… 0s");
        assert_eq!(spinner_line("⠋", 1, "a\x1b[2Jb"), "⠋ 1s  a\\u{1b}[2Jb");
    }

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
