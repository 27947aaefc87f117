//! What each request resends (`cargo xtask bench`): a scripted SWE-style trajectory of 20 and
//! of 100 steps over the real client, the strict mock server and real tools (the file editor on
//! a temporary project, a real bash shell) plus a screenshot tool, run in three modes:
//!
//! * `openmanus` — `Policies::openmanus()` and no compaction: OpenManus's requests;
//! * `untrimmed` — today's defaults before request trimming (`request_trimming = "openmanus"`,
//!   compaction on): the "before" of the trimming policies;
//! * `default` — the defaults (`request_trimming = "lean"`): the "after".
//!
//! For each: the requests, their bytes as sent and their tokens (tiktoken, gpt-4o), the last
//! request, and the bytes by kind over all requests (system prompt, tool schemas, the task,
//! assistant turns, the latest step's observations, older observations, images, other user
//! messages). Then the per-step cost of trimming itself. Figures only — nothing passes or fails,
//! except that every run must finish with the strict mock seeing no violation.

#![allow(
    clippy::print_stdout,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{Agent, ToolCall};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, LlmSettings, Model, TokenCounter};
use agent_testkit::mock_openai::{RecordedRequest, conversation_key};
use agent_testkit::{Completion, MockOpenAi};
use agent_toolcall::trimming::request_messages;
use agent_toolcall::{Compaction, Policies, RequestTrimming, ToolCallAgent};
use agent_tools::{Bash, StrReplaceEditor, Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use serde_json::{Value, json};

const TASK: &str = "The test suite of this project fails. Find the bugs in the modules, fix them, \
check the project's status page in the browser, and stop when the tests pass.";
const SUMMARY: &str = "You were asked to fix the failing tests. You viewed and edited several \
modules, ran the tests repeatedly and checked the status page. Left: the remaining failures.";
const FILES: usize = 8;
/// Base64 bytes of one screenshot (a compressed 1280×800 page is 40–150 KB).
const SCREENSHOT_BYTES: usize = 48 * 1024;

/// `screenshot`: a short description and a distinct image per call, as a browser tool returns.
struct Screenshot {
    taken: Mutex<usize>,
}

#[async_trait]
impl Tool for Screenshot {
    fn name(&self) -> &str {
        "screenshot"
    }
    fn description(&self) -> &str {
        "Takes a screenshot of the browser's current page."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let n = {
            let mut taken = self.taken.lock().unwrap();
            *taken += 1;
            *taken
        };
        // Deterministic base64 text, different for every shot.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ n as u64;
        let image: String = (0..SCREENSHOT_BYTES)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(ALPHABET[(state % 64) as usize])
            })
            .collect();
        let url = args["url"].as_str().unwrap_or_default();
        Ok(ToolResult::success(format!(
            "Screenshot {n} of {url}: 1280x800, status page with the latest test results."
        ))
        .with_image(image))
    }
}

/// A project of `FILES` modules (~5 KB each) and a test log per round.
fn write_project(dir: &Path) {
    for f in 0..FILES {
        let body: String = (1..=70)
            .map(|i| {
                format!(
                    "def compute_{f}_{i}(values, scale={i}):\n    return sum(v * scale for v in values) - {f}\n"
                )
            })
            .collect();
        std::fs::write(dir.join(format!("module_{f}.py")), body).unwrap();
    }
    for round in 0..20 {
        let log: String = (1..=45)
            .map(|i| {
                let status = if i % 9 == round % 9 {
                    "FAILED"
                } else {
                    "PASSED"
                };
                format!(
                    "tests/test_modules.py::test_compute_{round}_{i:02} {status:<8} [{:>3}%]\n",
                    i * 2
                )
            })
            .collect();
        std::fs::write(dir.join(format!("round_{round}.log")), log).unwrap();
    }
}

/// The scripted call of step `k` (0-based) in a 10-step round: view a module, run the tests,
/// edit the module, view it again, run the tests again (same output), look at part of another
/// module, two screenshots, a diff, the tests once more (same output).
fn step_call(dir: &Path, k: usize) -> ToolCall {
    let round = k / 10;
    let module = dir.join(format!("module_{}.py", round % FILES));
    let other = dir.join(format!("module_{}.py", (round + 3) % FILES));
    let module = module.to_string_lossy();
    let id = format!("call_{k}");
    let tests =
        json!({"command": format!("cat round_{round}.log; echo; echo '45 tests, 5 failed'")});
    let (tool, args) = match k % 10 {
        0 => (
            "str_replace_editor",
            json!({"command": "view", "path": module}),
        ),
        1 | 4 | 9 => ("bash", tests),
        2 => (
            "str_replace_editor",
            json!({"command": "str_replace", "path": module,
                   "old_str": format!("def compute_{}_{}(", round % FILES, 1 + round / FILES),
                   "new_str": format!("def compute_{}_{}_fixed(", round % FILES, 1 + round / FILES)}),
        ),
        3 => (
            "str_replace_editor",
            json!({"command": "view", "path": module}),
        ),
        5 => (
            "str_replace_editor",
            json!({"command": "view", "path": other.to_string_lossy(), "view_range": [1, 30]}),
        ),
        6 | 7 => (
            "screenshot",
            json!({"url": format!("http://localhost:8000/status?round={round}")}),
        ),
        _ => (
            "bash",
            json!({"command": format!("diff <(head -c 300 module_{}.py) <(head -c 300 module_{}.py.orig 2>/dev/null) | head -5; echo done", round % FILES, round % FILES)}),
        ),
    };
    ToolCall::new(id, tool, args.to_string())
}

/// Sizes of one request body by kind, in bytes.
#[derive(Debug, Default, Clone, Copy)]
struct Kinds {
    system: usize,
    tools: usize,
    task: usize,
    assistant: usize,
    latest_observations: usize,
    older_observations: usize,
    images: usize,
    other_user: usize,
}

impl Kinds {
    fn of(body: &Value) -> Self {
        let len = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
        let mut kinds = Self {
            tools: body.get("tools").map_or(0, len),
            ..Self::default()
        };
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
        let first_user = messages.iter().position(|m| m["role"] == "user");
        for (at, message) in messages.iter().enumerate() {
            let mut size = len(message);
            if let Some(parts) = message["content"].as_array() {
                for part in parts {
                    if let Some(url) = part["image_url"]["url"].as_str() {
                        kinds.images += url.len();
                        size -= url.len();
                    }
                }
            }
            match message["role"].as_str() {
                Some("system") => kinds.system += size,
                Some("assistant") => kinds.assistant += size,
                Some("tool") if last_assistant.is_some_and(|l| at > l) => {
                    kinds.latest_observations += size;
                }
                Some("tool") => kinds.older_observations += size,
                _ if Some(at) == first_user => kinds.task += size,
                _ => kinds.other_user += size,
            }
        }
        kinds
    }

    fn add(&mut self, other: Self) {
        self.system += other.system;
        self.tools += other.tools;
        self.task += other.task;
        self.assistant += other.assistant;
        self.latest_observations += other.latest_observations;
        self.older_observations += other.older_observations;
        self.images += other.images;
        self.other_user += other.other_user;
    }

    fn rows(&self) -> [(&'static str, usize); 8] {
        [
            ("system prompt", self.system),
            ("tool schemas", self.tools),
            ("task", self.task),
            ("assistant turns", self.assistant),
            ("latest observations", self.latest_observations),
            ("older observations", self.older_observations),
            ("images (base64)", self.images),
            ("other user messages", self.other_user),
        ]
    }
}

/// What the requests of one run added up to.
#[derive(Debug, Default)]
struct Measure {
    step_requests: usize,
    summary_requests: usize,
    summary_bytes: usize,
    bytes: usize,
    tokens: usize,
    last_bytes: usize,
    largest_bytes: usize,
    kinds: Kinds,
}

/// The real model client, measuring each request the mock received and then dropping it.
struct Measured {
    inner: Model,
    server: Arc<MockOpenAi>,
    counter: TokenCounter,
    measure: Mutex<Measure>,
}

impl Measured {
    fn record(&self, request: &RecordedRequest) {
        let body = &request.body;
        let bytes = request.raw_body.len();
        let tokens = self
            .counter
            .count_messages(body["messages"].as_array().map_or(&[][..], Vec::as_slice))
            + self
                .counter
                .count_tools(body["tools"].as_array().map_or(&[][..], Vec::as_slice));
        let mut m = self.measure.lock().unwrap();
        if conversation_key(body).as_deref() == Some(TASK) {
            m.step_requests += 1;
            m.last_bytes = bytes;
            m.kinds.add(Kinds::of(body));
        } else {
            m.summary_requests += 1;
            m.summary_bytes += bytes;
        }
        m.bytes += bytes;
        m.tokens += tokens;
        m.largest_bytes = m.largest_bytes.max(bytes);
    }
}

#[async_trait]
impl ChatModel for Measured {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let response = self.inner.complete(request).await;
        for recorded in self.server.take_requests() {
            self.record(&recorded);
        }
        response
    }
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn supports_images(&self) -> bool {
        self.inner.supports_images()
    }
    fn context_window(&self) -> Option<u64> {
        self.inner.context_window()
    }
}

#[derive(Clone, Copy)]
enum Mode {
    OpenManus,
    Untrimmed,
    Default,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Self::OpenManus => "openmanus",
            Self::Untrimmed => "untrimmed",
            Self::Default => "default",
        }
    }

    fn configure(self, agent: ToolCallAgent) -> ToolCallAgent {
        match self {
            Self::OpenManus => agent
                .with_policies(Policies::openmanus())
                .with_compaction(Compaction::off()),
            Self::Untrimmed => agent.with_policies(Policies {
                request_trimming: RequestTrimming::OPENMANUS,
                ..Policies::default()
            }),
            Self::Default => agent.with_policies(Policies::default()),
        }
    }
}

/// Runs the `steps`-step trajectory in `mode`; returns the measure and the final memory.
async fn run(steps: usize, mode: Mode) -> (Measure, Vec<agent_core::Message>, Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let server = Arc::new(MockOpenAi::start().await.unwrap());
    for k in 0..steps - 1 {
        server.push_for(
            TASK,
            Completion::tool_calls(Some(format!("Step {k}.")), [step_call(dir.path(), k)]),
        );
    }
    server.push_for(
        TASK,
        Completion::tool_calls(
            Some("The tests pass.".into()),
            [ToolCall::new("end", "terminate", r#"{"status":"success"}"#)],
        ),
    );
    server.set_fallback(Some(Completion::text(SUMMARY).into()));
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-bench");
    settings.max_attempts = 1;
    let model = Arc::new(Measured {
        inner: Model::new(settings).unwrap(),
        server: server.clone(),
        counter: TokenCounter::for_model("gpt-4o"),
        measure: Mutex::new(Measure::default()),
    });
    let agent = ToolCallAgent::new(model.clone())
        .with_tool(StrReplaceEditor::new().with_workspace_root(dir.path()))
        .with_tool(Bash::new().with_cwd(dir.path()))
        .with_tool(Screenshot {
            taken: Mutex::new(0),
        })
        .with_max_steps(u32::try_from(steps).unwrap() + 1)
        .with_max_messages(100_000);
    let mut agent = mode.configure(agent);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(
        outcome.is_finished(),
        "{}: {}",
        mode.label(),
        outcome.status
    );
    if let Err(violations) = server.verify() {
        panic!("{}: the strict mock saw {violations}", mode.label());
    }
    agent_core::check_tool_pairing(agent.messages(), false).unwrap();
    let memory = agent.messages().to_vec();
    let task = agent.base().memory.task_index();
    let measure = std::mem::take(&mut *model.measure.lock().unwrap());
    (measure, memory, task)
}

fn kib(bytes: usize) -> f64 {
    bytes as f64 / 1024.0
}

fn saving(before: usize, after: usize) -> f64 {
    100.0 * (1.0 - after as f64 / before.max(1) as f64)
}

/// The best time of `request_messages` over `memory` under `trimming`.
fn best_build(
    memory: &[agent_core::Message],
    task: Option<usize>,
    trimming: RequestTrimming,
) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..50 {
        let started = Instant::now();
        let messages = request_messages(memory, task, trimming);
        let elapsed = started.elapsed();
        std::hint::black_box(messages);
        best = best.min(elapsed);
    }
    best
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        println!(
            "request_bytes: what each request resends, over the real client and the strict mock \
             (gpt-4o, {} KiB screenshots)\n",
            SCREENSHOT_BYTES / 1024
        );
        for steps in [20usize, 100] {
            let mut results = Vec::new();
            for mode in [Mode::OpenManus, Mode::Untrimmed, Mode::Default] {
                let (measure, memory, task) = run(steps, mode).await;
                results.push((mode, measure, memory, task));
            }
            println!("{steps}-step trajectory:");
            println!(
                "  {:10} {:>8} {:>8} {:>12} {:>12} {:>10} {:>11} {:>11}",
                "mode", "requests", "summary", "bytes (KiB)", "no images", "tokens", "last (KiB)", "largest"
            );
            for (mode, m, _, _) in &results {
                println!(
                    "  {:10} {:>8} {:>8} {:>12.1} {:>12.1} {:>10} {:>11.1} {:>11.1}",
                    mode.label(),
                    m.step_requests,
                    m.summary_requests,
                    kib(m.bytes),
                    kib(m.bytes - m.kinds.images),
                    m.tokens,
                    kib(m.last_bytes),
                    kib(m.largest_bytes)
                );
            }
            println!("  (bytes and tokens: every request, summary requests included; \"no images\": without the images' base64)");
            let (openmanus, untrimmed, default) = (&results[0].1, &results[1].1, &results[2].1);
            println!(
                "  default vs openmanus: {:.1} % fewer bytes, {:.1} % fewer tokens; \
                 default vs untrimmed (the trimming policies alone): {:.1} % fewer bytes, {:.1} % fewer tokens",
                saving(openmanus.bytes, default.bytes),
                saving(openmanus.tokens, default.tokens),
                saving(untrimmed.bytes, default.bytes),
                saving(untrimmed.tokens, default.tokens),
            );
            println!(
                "  without images: default vs openmanus {:.1} % fewer bytes, default vs untrimmed {:.1} %",
                saving(openmanus.bytes - openmanus.kinds.images, default.bytes - default.kinds.images),
                saving(untrimmed.bytes - untrimmed.kinds.images, default.bytes - default.kinds.images),
            );
            println!("  bytes by kind over the step requests (KiB): untrimmed -> default");
            for ((label, before), (_, after)) in untrimmed.kinds.rows().iter().zip(default.kinds.rows()) {
                println!(
                    "    {label:22} {:>10.1} -> {:>10.1}  ({:+.1} %)",
                    kib(*before),
                    kib(after),
                    -saving(*before, after)
                );
            }
            let (_, _, memory, task) = &results[2];
            let lean = best_build(memory, *task, RequestTrimming::LEAN);
            let off = best_build(memory, *task, RequestTrimming::OPENMANUS);
            println!(
                "  building the messages of the last request ({} messages): {:.1} µs trimmed, \
                 {:.1} µs copied as they are\n",
                memory.len(),
                lean.as_secs_f64() * 1e6,
                off.as_secs_f64() * 1e6
            );
        }
    });
}
