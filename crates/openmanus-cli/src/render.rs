//! Live rendering of an agent's events: readable text on the terminal (colours and a spinner
//! only on a TTY), or JSON lines for other programs.

use std::io::Write;
use std::time::Duration;

use agent_core::AgentEvent;
use agent_session::Session;
use agents::FlowEvent;
use anstyle::AnsiColor;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};
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

/// The styles of the live view (anstyle), applied only when colour is allowed.
struct Style {
    colour: bool,
}

impl Style {
    fn paint(&self, style: anstyle::Style, text: &str) -> String {
        paint(self.colour, style, text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), text)
    }
    fn bold(&self, text: &str) -> String {
        self.paint(anstyle::Style::new().bold(), text)
    }
    fn green(&self, text: &str) -> String {
        self.paint(AnsiColor::Green.on_default(), text)
    }
    fn red(&self, text: &str) -> String {
        self.paint(AnsiColor::Red.on_default(), text)
    }
    fn yellow(&self, text: &str) -> String {
        self.paint(AnsiColor::Yellow.on_default(), text)
    }
    fn cyan(&self, text: &str) -> String {
        self.paint(AnsiColor::Cyan.on_default(), text)
    }
}

/// `text` in `style` when `colour` is allowed, else as it is.
pub fn paint(colour: bool, style: anstyle::Style, text: &str) -> String {
    if colour {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
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

/// The state of one live view: style and spinner.
struct Renderer {
    mode: Mode,
    style: Style,
    /// A spinner may be drawn (the text view on a terminal that is not `dumb`).
    animate: bool,
    /// The spinner, while the model is thinking.
    spinner: Option<ProgressBar>,
    /// The reply streamed so far in this step (the spinner shows its end).
    streamed: String,
    /// A thought that may be the final answer (its only call is `terminate`, or it has no
    /// calls): shown when the run goes on, left to the report (which labels the answer) when
    /// the run ends, so the answer is not printed twice.
    pending: Option<String>,
}

impl Renderer {
    fn new(mode: Mode) -> Self {
        let terminal = crate::color::terminal();
        Self {
            mode,
            style: Style {
                colour: terminal.colour,
            },
            animate: terminal.animate && mode == Mode::Text,
            spinner: None,
            streamed: String::new(),
            pending: None,
        }
    }

    /// Starts the spinner (the model is thinking).
    fn start_spinner(&mut self) {
        self.stop_spinner();
        if self.animate {
            self.spinner = Some(spinner(self.style.colour));
        }
    }

    /// Erases the spinner's line.
    fn stop_spinner(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
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
                Mode::Text => {
                    self.streamed.push_str(text);
                    if let Some(spinner) = &self.spinner {
                        spinner.set_message(spinner_message(&self.streamed));
                    }
                }
                Mode::Quiet => {}
            }
            return;
        }
        self.streamed.clear();
        self.stop_spinner();
        match self.mode {
            Mode::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    out(&line);
                }
            }
            Mode::Text => self.text(event),
            Mode::Quiet => {}
        }
        if matches!(event, AgentEvent::StepStarted { .. }) {
            self.start_spinner();
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
        self.stop_spinner();
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
    fn finish(mut self) -> Option<String> {
        self.stop_spinner();
        self.pending
    }
}

/// The text view of a run that happens elsewhere (`openmanus submit --follow`): the agent
/// events are shown as a local run's live view shows them, as they arrive.
pub struct Follow(Renderer);

impl Follow {
    /// A view in `mode` (the spinner only in the text view on a terminal).
    pub fn new(mode: Mode) -> Self {
        Self(Renderer::new(mode))
    }

    /// Shows one agent event.
    pub fn agent(&mut self, event: &AgentEvent) {
        self.0.agent(event);
    }

    /// Stops the spinner. The thought held back as the likely answer is dropped: the result
    /// carries the answer.
    pub fn finish(self) {
        let _ = self.0.finish();
    }
}

/// The live view of one run: the session's agent events and, for a flow, its flow events.
pub struct Live {
    /// The view's task and how to stop it (`None` in the quiet view, which shows nothing live).
    running: Option<(oneshot::Sender<()>, JoinHandle<Option<String>>)>,
}

impl Live {
    /// Starts showing the events of `session` from now on.
    pub fn start(session: &Session, mode: Mode) -> Self {
        if mode == Mode::Quiet {
            // Nothing to show until the answer: no subscriber copying every event for nothing.
            return Self { running: None };
        }
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
        Self {
            running: Some((stop, task)),
        }
    }

    /// Shows what is still queued of the run (it has returned) and stops. Returns the last
    /// thought when it was held back as the likely answer (the text view only).
    pub async fn finish(self) -> Option<String> {
        let (stop, task) = self.running?;
        let _ = stop.send(());
        task.await.ok().flatten()
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

/// The widest spinner line, in characters.
const SPINNER_WIDTH: usize = 64;

/// The characters of streamed text the spinner line shows.
const SPINNER_TEXT: usize = 50;

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

/// What the spinner says after the seconds: the end of the streamed text (prose only: a
/// text-mode model's call markup is taken out of the deltas where they are made, in agent-llm),
/// control characters escaped like the rest of the live view.
fn spinner_message(streamed: &str) -> String {
    let text = printable(&tail(streamed, SPINNER_TEXT)).into_owned();
    if text.is_empty() {
        "waiting for the model…".to_owned()
    } else {
        text
    }
}

/// A spinner (indicatif) on standard error with the seconds the model has been thinking:
/// `⠋ 3s  waiting for the model…`, dimmed when colour is allowed. Without colour it is drawn
/// with carriage returns and spaces only ([`PlainLine`]): no escape code at all.
fn spinner(colour: bool) -> ProgressBar {
    const FRAMES: [&str; 11] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", " "];
    let (template, target) = if colour {
        (
            "{spinner:.dim} {secs:.dim}  {msg:.dim}",
            ProgressDrawTarget::stderr(),
        )
    } else {
        (
            "{spinner} {secs}  {msg}",
            ProgressDrawTarget::term_like(Box::new(PlainLine)),
        )
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .tick_strings(&FRAMES)
        .with_key(
            "secs",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}s", state.elapsed().as_secs());
            },
        );
    let bar = ProgressBar::with_draw_target(None, target)
        .with_style(style)
        .with_message(spinner_message(""));
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Standard error as one line redrawn with a carriage return and overwritten with spaces: what
/// the spinner draws on when escape codes are not allowed (`NO_COLOR`, `--color never`).
#[derive(Debug)]
struct PlainLine;

impl TermLike for PlainLine {
    fn width(&self) -> u16 {
        SPINNER_WIDTH as u16
    }

    // The spinner is one line, so the cursor never has to leave it.
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        writeln!(std::io::stderr(), "{line}")
    }

    fn write_str(&self, text: &str) -> std::io::Result<()> {
        write!(std::io::stderr(), "{text}")
    }

    fn clear_line(&self) -> std::io::Result<()> {
        write!(
            std::io::stderr(),
            "\r{:width$}\r",
            "",
            width = SPINNER_WIDTH
        )
    }

    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
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
        AgentEvent::ToolProgress { message, .. } => {
            err(&style.dim(&format!("  … {}", preview(message, 1, 200))));
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
        AgentEvent::Permission {
            name,
            request,
            decision,
            by,
            detail,
            ..
        } => {
            let line = format!("  ⚖ {name}: {request}: {decision} by the {by} ({detail})");
            err(&match decision {
                agent_protocol::PermissionDecision::Allowed => style.yellow(&line),
                agent_protocol::PermissionDecision::Denied => style.red(&line),
            });
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
                // The cost only when every call was priced (the result line shows a partial one).
                let cost = usage.cost_usd.filter(|_| usage.unpriced_calls == 0);
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
    fn the_spinner_shows_the_end_of_the_text() {
        assert_eq!(
            spinner_message("First line.\nI will list the files.\n"),
            "I will list the files."
        );
        assert_eq!(spinner_message(""), "waiting for the model…");
        assert_eq!(spinner_message("a\x1b[2Jb"), "a\\u{1b}[2Jb");
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
