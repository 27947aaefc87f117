//! A real `nats-server -js` on 127.0.0.1, the strict mock model, and in-process workers.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use agent_config::Config;
use agent_core::ToolCall;
use agent_llm::LlmSettings;
use agent_testkit::{Completion, MockOpenAi, NatsServer};
use agent_worker::{
    EventStream, Names, Nats, NatsOptions, QueueSettings, TaskEvent, Worker, WorkerOptions,
    WorkerSummary,
};
use agents::AgentFactory;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A generous bound for anything a test waits on (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(120);

pub fn factory(mock: &MockOpenAi, root: &Path) -> AgentFactory {
    factory_with(mock, root, |_| {})
}

/// [`factory`] with the configuration changed by `change`.
#[allow(dead_code)] // not every test binary changes it
pub fn factory_with(
    mock: &MockOpenAi,
    root: &Path,
    change: impl FnOnce(&mut Config),
) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", mock.base_url()).with_api_key("sk-worker");
    llm.max_attempts = 1;
    let mut config = Config::new(llm);
    change(&mut config);
    AgentFactory::new(config).with_workspace(root)
}

pub fn call(id: &str, name: &str, args: &serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

/// A reply that ends the run with `answer` as its thought.
pub fn finish(answer: &str) -> Completion {
    Completion::tool_calls(
        Some(answer.into()),
        [call("t1", "terminate", &json!({"status": "success"}))],
    )
    .with_usage(30, 5)
}

pub async fn connect(server: &NatsServer, settings: &QueueSettings) -> Nats {
    Nats::connect(&NatsOptions::new(server.url()), Names::default(), settings)
        .await
        .unwrap()
}

/// A worker running in this process until its token is cancelled.
pub struct RunningWorker {
    pub stop: CancellationToken,
    pub handle: JoinHandle<WorkerSummary>,
}

impl RunningWorker {
    pub fn start(nats: Nats, factory: AgentFactory, options: WorkerOptions) -> Self {
        let stop = CancellationToken::new();
        let worker = Worker::new(nats, factory, options);
        let token = stop.clone();
        let handle = tokio::spawn(async move { worker.run(token).await.unwrap() });
        Self { stop, handle }
    }

    pub async fn stop(self) -> WorkerSummary {
        self.stop.cancel();
        tokio::time::timeout(PATIENCE, self.handle)
            .await
            .expect("the worker stops")
            .unwrap()
    }
}

/// Reads events until one matches, returning all read so far.
pub async fn until(events: &mut EventStream, done: impl Fn(&TaskEvent) -> bool) -> Vec<TaskEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(PATIENCE, events.next())
            .await
            .expect("an event in time")
            .expect("the event stream is open")
            .unwrap();
        let stop = done(&event);
        seen.push(event);
        if stop {
            return seen;
        }
    }
}

/// The `type` of an agent event, or the kind of another.
pub fn name(event: &TaskEvent) -> String {
    event.data["type"]
        .as_str()
        .map_or_else(|| event.kind.to_string(), str::to_owned)
}
