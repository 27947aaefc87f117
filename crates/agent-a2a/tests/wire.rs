//! The bytes of the A2A JSON this crate writes, in both dialects (protocol 1.0 and the
//! 0.2/0.3 of a2a-sdk 0.2.5), pinned in `tests/snapshots/a2a.snap`: every task state, every
//! part, messages, tasks, the four stream events, JSON-RPC results and errors, the Agent Card.
//! A change of a byte fails with the case named (`UPDATE_SNAPSHOTS=1` rewrites on purpose).

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_a2a::codec::Dialect;
use agent_a2a::rpc::{failure, success};
use agent_a2a::types::{
    Artifact, ArtifactUpdate, Message, Part, Role, StatusUpdate, StreamEvent, Task, TaskState,
    TaskStatus,
};
use agent_a2a::{A2aErrors, CardInfo, RpcError, Skill, agent_card};
use agent_testkit::snapshot::Snapshot;
use serde_json::json;

const STATES: [TaskState; 9] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::InputRequired,
    TaskState::AuthRequired,
    TaskState::Completed,
    TaskState::Canceled,
    TaskState::Failed,
    TaskState::Rejected,
    TaskState::Unknown,
];

const DIALECTS: [(&str, Dialect); 2] = [("v1", Dialect::V1), ("legacy", Dialect::Legacy)];

fn parts() -> Vec<(&'static str, Part)> {
    vec![
        ("text", Part::Text("Write \"hello\".".into())),
        ("data", Part::Data(json!({"rows": 12, "ok": true}))),
        (
            "file_uri",
            Part::File {
                name: Some("chart.png".into()),
                media_type: Some("image/png".into()),
                uri: Some("https://example.test/chart.png".into()),
                bytes: None,
            },
        ),
        (
            "file_bytes",
            Part::File {
                name: None,
                media_type: Some("text/plain".into()),
                uri: None,
                bytes: Some("aGk=".into()),
            },
        ),
    ]
}

fn message(role: Role) -> Message {
    Message {
        message_id: "m-1".into(),
        role,
        parts: vec![Part::Text("Write hello.txt".into())],
        context_id: Some("c-1".into()),
        task_id: Some("t-1".into()),
        metadata: None,
    }
}

fn status(state: TaskState) -> TaskStatus {
    TaskStatus {
        state,
        message: Some(message(Role::Agent)),
        timestamp: Some("2026-01-01T00:00:00.000Z".into()),
    }
}

fn artifact() -> Artifact {
    Artifact {
        artifact_id: "t-1-answer".into(),
        name: Some("answer".into()),
        description: Some("the agent's final answer".into()),
        parts: vec![Part::Text("Done.".into())],
    }
}

fn task(state: TaskState) -> Task {
    Task {
        id: "t-1".into(),
        context_id: "c-1".into(),
        status: status(state),
        artifacts: vec![artifact()],
        history: vec![message(Role::User)],
    }
}

#[test]
fn a2a_json_of_both_dialects() {
    let mut snap = Snapshot::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/a2a.snap"
    ));
    for (dialect_name, dialect) in DIALECTS {
        for (name, part) in parts() {
            snap.case(
                format!("{dialect_name}.part.{name}"),
                dialect.encode_part(&part).to_string(),
            );
        }
        for role in [Role::User, Role::Agent] {
            snap.case(
                format!("{dialect_name}.message.{role:?}"),
                dialect.encode_message(&message(role)).to_string(),
            );
        }
        for state in STATES {
            snap.case(
                format!("{dialect_name}.task.{state:?}"),
                dialect.encode_task(&task(state)).to_string(),
            );
        }
        let events = [
            ("task", StreamEvent::Task(task(TaskState::Working))),
            ("message", StreamEvent::Message(message(Role::Agent))),
            (
                "status",
                StreamEvent::Status(StatusUpdate {
                    task_id: "t-1".into(),
                    context_id: "c-1".into(),
                    status: status(TaskState::Completed),
                    is_final: true,
                }),
            ),
            (
                "artifact",
                StreamEvent::Artifact(ArtifactUpdate {
                    task_id: "t-1".into(),
                    context_id: "c-1".into(),
                    artifact: artifact(),
                    append: false,
                    last_chunk: true,
                }),
            ),
        ];
        for (name, event) in events {
            let encoded = dialect.encode_event(&event);
            snap.case(format!("{dialect_name}.event.{name}"), encoded.to_string());
            // What is written is read back as the same event.
            assert_eq!(dialect.decode_event(&encoded).unwrap(), event, "{name}");
        }
        snap.case(
            format!("{dialect_name}.rpc.success"),
            success(&json!(7), dialect.encode_task(&task(TaskState::Completed))).to_string(),
        );
    }
    snap.case(
        "rpc.failure",
        failure(&json!("req-1"), &RpcError::task_not_found("t-9")).to_string(),
    );
    for bearer in [false, true] {
        let card = agent_card(&CardInfo {
            name: "Manus".into(),
            description: "A versatile agent".into(),
            version: "0.1.0".into(),
            url: "http://127.0.0.1:8000/a2a".into(),
            streaming: true,
            skills: vec![Skill {
                id: "bash".into(),
                name: "bash".into(),
                description: "Run a command".into(),
                tags: vec!["tool".into()],
            }],
            bearer,
            // The snapshot of the card as it was before push notifications were served.
            push_notifications: false,
        });
        snap.case(format!("card.bearer_{bearer}"), card.to_string());
    }
    snap.check();
}
