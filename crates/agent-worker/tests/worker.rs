//! Workers against a real `nats-server -js` child and the strict mock model: a task's result
//! and events, continued sessions, tasks handed back on stop, and a long task kept alive by
//! in-progress acknowledgements; a call that would need approval denied without waiting.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use agent_session::Ending;
use agent_testkit::{Completion, MockOpenAi, NatsServer};
use agent_worker::{QueueSettings, Submitter, TaskMessage, WorkerOptions};
use common::{PATIENCE, RunningWorker, call, connect, factory, finish, name, until};
use serde_json::json;

#[tokio::test]
async fn a_submitted_task_runs_on_a_worker_and_its_result_and_events_come_back() {
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let settings = QueueSettings::default();
    let nats = connect(&server, &settings).await;
    let task = TaskMessage::new("swe", "Write notes.md");
    mock.push_for(
        "Write notes.md",
        Completion::tool_calls(
            Some("Writing.".into()),
            [call(
                "c1",
                "bash",
                &json!({"command": "printf hello > notes.md"}),
            )],
        )
        .with_usage(40, 4),
    )
    .push_for("Write notes.md", finish("Done: notes.md holds hello."));
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    let submitted = submitter.submit(&task).await.unwrap();
    assert!(!submitted.duplicate);
    // The same id again is recognised and dropped.
    assert!(submitter.submit(&task).await.unwrap().duplicate);

    let worker = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        WorkerOptions::new(dir.path().join("tasks")),
    );
    let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
        .await
        .expect("a result in time")
        .unwrap();
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    assert_eq!(result.task_id, task.id);
    assert_eq!(result.attempt, 1);
    assert_eq!(result.usage.prompt_tokens, 70);
    assert_eq!(result.usage.completion_tokens, 9);
    assert!(
        result
            .answer
            .as_deref()
            .unwrap_or("")
            .contains("notes.md holds hello")
            || result.text.contains("notes.md holds hello"),
        "{result:?}"
    );
    assert!(
        result.changes.to_string().contains("notes.md"),
        "{result:?}"
    );
    // The task ran in its own workspace.
    let written = dir.path().join("tasks").join(&task.id).join("notes.md");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "hello");

    let seen = until(&mut events, |e| e.kind.to_string() == "run_finished").await;
    assert_eq!(seen.len() as u64, result.events, "{seen:?}");
    let names: Vec<String> = seen.iter().map(name).collect();
    assert_eq!(names.first().map(String::as_str), Some("run_started"));
    for expected in [
        "step_started",
        "thought",
        "tool_call_started",
        "tool_call_finished",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing: {names:?}"
        );
    }
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "in order, no gap"
    );
    assert!(seen.iter().all(|e| e.attempt == 1 && e.task_id == task.id));

    let summary = worker.stop().await;
    assert_eq!(summary.completed, 1, "{summary:?}");
    assert_eq!(summary.handed_back, 0, "{summary:?}");
    mock.verify().unwrap();
    // The queue is empty: the task was acknowledged (work-queue retention removes it).
    let mut stream = nats
        .jetstream()
        .get_stream(nats.names().task_stream())
        .await
        .unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 0);
}

#[tokio::test]
async fn tasks_of_one_session_continue_its_conversation_through_the_sessions_bucket() {
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nats = connect(&server, &QueueSettings::default()).await;
    mock.push_for("Remember the word teal", finish("I will remember teal."))
        .push_for("Remember the word teal", finish("The word was teal."));
    let submitter = Submitter::new(nats.clone());
    let worker = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        WorkerOptions::new(dir.path().join("tasks")),
    );
    let first = TaskMessage::new("swe", "Remember the word teal").in_session("conversation-1");
    submitter.submit(&first).await.unwrap();
    let one = submitter.wait_result(&first.id).await.unwrap();
    assert_eq!(one.ending, Ending::Finished);
    let second = TaskMessage::new("swe", "Which word was it?").in_session("conversation-1");
    submitter.submit(&second).await.unwrap();
    let two = submitter.wait_result(&second.id).await.unwrap();
    assert_eq!(two.ending, Ending::Finished, "{two:?}");
    assert_eq!(two.session_id, "conversation-1");
    // The second request carried the first task's conversation: same first user message
    // (the mock's conversation key), and the second task after it.
    let requests = mock.requests();
    let last = requests.last().unwrap();
    let texts: Vec<String> = last
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Remember the word teal")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("Which word was it?")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("I will remember teal.")),
        "{texts:?}"
    );
    worker.stop().await;
    mock.verify().unwrap();
}

#[tokio::test]
async fn a_long_task_is_not_redelivered_while_its_worker_sends_in_progress_acks() {
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The task takes several ack_waits; the worker says it is alive three times per ack_wait.
    let settings = QueueSettings {
        ack_wait: Duration::from_secs(2),
        ..QueueSettings::default()
    };
    let nats = connect(&server, &settings).await;
    let task = TaskMessage::new("swe", "Sleep a while");
    mock.push_for(
        "Sleep a while",
        Completion::tool_calls(
            Some("Sleeping.".into()),
            [call(
                "c1",
                "bash",
                &json!({"command": "sleep 7; echo awake"}),
            )],
        ),
    )
    .push_for("Sleep a while", finish("Awake."));
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    submitter.submit(&task).await.unwrap();
    let options = |n: &str| {
        let mut options = WorkerOptions::new(dir.path().join(n));
        options.progress_interval = Duration::from_millis(600);
        options
    };
    let first = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        options("one"),
    );
    // Once the first worker is inside the long tool call, a second worker joins: it would
    // get the task if its deadline lapsed.
    until(&mut events, |e| name(e) == "tool_call_started").await;
    let second = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        options("two"),
    );
    let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    assert_eq!(result.attempt, 1, "never redelivered: {result:?}");
    let seen = until(&mut events, |e| e.kind.to_string() == "run_finished").await;
    assert!(seen.iter().all(|e| e.attempt == 1), "{seen:?}");
    let one = first.stop().await;
    let two = second.stop().await;
    assert_eq!(one.completed + two.completed, 1);
    assert_eq!(
        one.completed, 1,
        "the first worker kept it: {one:?} {two:?}"
    );
    assert_eq!(
        mock.request_count(),
        2,
        "the model was asked twice, by one run"
    );
    mock.verify().unwrap();
}

#[tokio::test]
async fn a_stopping_worker_hands_its_task_back_and_another_completes_it() {
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A deadline far beyond the test's patience: only a handed-back task comes back in time.
    let settings = QueueSettings {
        ack_wait: Duration::from_secs(600),
        ..QueueSettings::default()
    };
    let nats = connect(&server, &settings).await;
    let task = TaskMessage::new("swe", "Wait for the stop");
    mock.push_for(
        "Wait for the stop",
        Completion::tool_calls(
            Some("Waiting.".into()),
            [call("c1", "bash", &json!({"command": "sleep 600"}))],
        ),
    )
    .push_for(
        "Wait for the stop",
        finish("Finished by the second worker."),
    );
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    submitter.submit(&task).await.unwrap();
    let first = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        WorkerOptions::new(dir.path().join("one")),
    );
    until(&mut events, |e| name(e) == "tool_call_started").await;
    let summary = first.stop().await;
    // Handed back at least once (a pull in flight may get it again while stopping: it is
    // handed back again).
    assert!(summary.handed_back >= 1, "{summary:?}");
    assert_eq!(summary.completed, 0, "{summary:?}");
    assert!(submitter.result(&task.id).await.unwrap().is_none());
    // Handed back, not waiting out its ack_wait: a new worker completes it at once.
    let second = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        WorkerOptions::new(dir.path().join("two")),
    );
    let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
        .await
        .expect("the handed-back task was taken before its ack_wait ran out")
        .unwrap();
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    assert!(result.attempt >= 2, "{result:?}");
    assert_eq!(second.stop().await.completed, 1);
    mock.verify().unwrap();
}

#[tokio::test]
async fn a_call_that_would_need_approval_is_denied_on_a_worker_without_waiting() {
    // The default sandbox and policy (workspace-write, on-request): a call that needs the network
    // would be asked about, but nobody answers on a worker, so it is denied at once and the run
    // goes on to its end.
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let settings = QueueSettings::default();
    let nats = connect(&server, &settings).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ask = "Tell the local service hello";
    let task = TaskMessage::new("swe", ask);
    mock.push_for(
        ask,
        Completion::tool_calls(
            Some("Calling it.".into()),
            [call(
                "c1",
                "bash",
                &json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3")}),
            )],
        ),
    )
    .push_for(ask, finish("The service cannot be reached from here."));
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    submitter.submit(&task).await.unwrap();
    let worker = RunningWorker::start(
        nats.clone(),
        factory(&mock, &dir.path().join("default")),
        WorkerOptions::new(dir.path().join("tasks")),
    );
    let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
        .await
        .expect("a result in time: nothing waits for an answer")
        .unwrap();
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    let seen = until(&mut events, |e| e.kind.to_string() == "run_finished").await;
    let decisions: Vec<_> = seen
        .iter()
        .filter(|e| name(e) == "permission")
        .map(|e| e.data.clone())
        .collect();
    assert_eq!(decisions.len(), 1, "{seen:?}");
    assert_eq!(decisions[0]["decision"], "denied", "{decisions:?}");
    assert_eq!(decisions[0]["by"], "policy", "{decisions:?}");
    assert!(
        decisions[0]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("nobody is there to ask"),
        "{decisions:?}"
    );
    // The model was told it was refused and how to allow it; the service heard nothing.
    let observed = mock.requests()[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<String>();
    assert!(observed.contains("--sandbox full-access"), "{observed}");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "the refused call did not reach the service"
    );
    let summary = worker.stop().await;
    assert_eq!(summary.completed, 1, "{summary:?}");
    mock.verify().unwrap();
}
