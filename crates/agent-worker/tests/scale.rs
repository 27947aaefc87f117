//! Many tasks over several workers, and a NATS server restarted in the middle of a run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use agent_session::Ending;
use agent_testkit::{Completion, MockOpenAi, NatsServer};
use agent_worker::{QueueSettings, Submitter, TaskMessage, WorkerOptions};
use common::{PATIENCE, RunningWorker, call, connect, factory, factory_with, finish, name, until};
use futures::StreamExt;
use serde_json::json;

#[tokio::test]
async fn thirty_tasks_over_three_workers_have_one_result_each_and_ordered_events() {
    let server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nats = connect(&server, &QueueSettings::default()).await;
    let submitter = Submitter::new(nats.clone());
    let workers: Vec<RunningWorker> = (0..3)
        .map(|n| {
            let mut options = WorkerOptions::new(dir.path().join(format!("w{n}")));
            options.name = format!("w{n}");
            RunningWorker::start(
                nats.clone(),
                factory(&mock, &dir.path().join("default")),
                options,
            )
        })
        .collect();
    let mut tasks = Vec::new();
    let mut streams = Vec::new();
    for n in 0..30 {
        let text = format!("Task number {n}");
        mock.push_for(
            text.as_str(),
            Completion::tool_calls(
                Some(format!("Step for {n}.")),
                [call("c1", "bash", &json!({"command": format!("echo {n}")}))],
            ),
        )
        .push_for(text.as_str(), finish(&format!("Answer {n}.")));
        let task = TaskMessage::new("swe", text);
        streams.push(submitter.events(&task.id).await.unwrap());
        submitter.submit(&task).await.unwrap();
        tasks.push(task);
    }
    let mut by_worker: HashMap<String, usize> = HashMap::new();
    for (task, events) in tasks.iter().zip(streams.iter_mut()) {
        let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
            .await
            .expect("every task completes")
            .unwrap();
        assert_eq!(result.ending, Ending::Finished, "{result:?}");
        assert_eq!(result.attempt, 1);
        *by_worker.entry(result.worker.clone()).or_default() += 1;
        let seen = until(events, |e| e.kind.as_str() == "run_finished").await;
        let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (1..=seen.len() as u64).collect::<Vec<_>>(),
            "in order"
        );
        assert_eq!(seen.len() as u64, result.events);
        assert!(
            seen.iter()
                .all(|e| e.task_id == task.id && e.worker == result.worker)
        );
    }
    // One result per task, no other key.
    let mut keys = nats.results().keys().await.unwrap();
    let mut count = 0;
    while let Some(key) = keys.next().await {
        key.unwrap();
        count += 1;
    }
    assert_eq!(count, 30);
    let mut completed = 0;
    for worker in workers {
        completed += worker.stop().await.completed;
    }
    assert_eq!(completed, 30);
    assert_eq!(by_worker.values().sum::<usize>(), 30);
    mock.verify().unwrap();
}

#[tokio::test]
async fn a_run_completes_when_the_nats_server_restarts_in_its_middle() {
    let mut server = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nats = connect(&server, &QueueSettings::default()).await;
    let flag = dir.path().join("go");
    let task = TaskMessage::new("swe", "Outlive the queue");
    // The tool waits for the test to say go: the server restarts while it waits.
    mock.push_for(
        "Outlive the queue",
        Completion::tool_calls(
            Some("Waiting.".into()),
            [call(
                "c1",
                "bash",
                &json!({"command": format!("while [ ! -e {} ]; do sleep 0.2; done; echo went", flag.display())}),
            )],
        ),
    )
    .push_for("Outlive the queue", finish("Went."));
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    submitter.submit(&task).await.unwrap();
    let worker = RunningWorker::start(
        nats.clone(),
        // Unconfined: the bash waits on a flag outside its workspace, in the host's /tmp.
        factory_with(&mock, &dir.path().join("default"), |config| {
            config.permissions.sandbox = agent_config::SandboxMode::FullAccess;
        }),
        WorkerOptions::new(dir.path().join("tasks")),
    );
    until(&mut events, |e| name(e) == "tool_call_started").await;
    server.restart().unwrap();
    std::fs::write(&flag, "").unwrap();
    // The clients reconnect by themselves; the result is stored once the server is back.
    let result = tokio::time::timeout(PATIENCE, async {
        loop {
            match submitter.result(&task.id).await {
                Ok(Some(result)) => return result,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await
    .expect("the run completed after the restart");
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    assert_eq!(result.attempt, 1);
    assert_eq!(worker.stop().await.completed, 1);
    mock.verify().unwrap();
}
