//! One record of a run: long texts stored once per session, model exchanges beside the events,
//! run texts kept as parts, and stores written before all of it still read the same.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use agent_core::Message;
use agent_store::{
    Batch, EventKind, ExchangePart, MIN_TEXT, MemoryWrite, NewEvent, NewExchange, NewSession,
    RunState, RunSummary, Store, TokenUsage,
};
use serde_json::{Value, json};
use sqlx::Connection;

async fn file_store(dir: &Path) -> Store {
    Store::open(dir.join("sessions.db")).await.unwrap()
}

async fn new_session(store: &Store) -> agent_store::SessionRecord {
    store
        .create_session(NewSession::new("swe", "/w"))
        .await
        .unwrap()
}

/// How many rows `table` has, read with a connection of its own.
async fn rows(dir: &Path, table: &str) -> i64 {
    let url = format!("sqlite://{}", dir.join("sessions.db").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&mut db)
        .await
        .unwrap()
}

/// An observation of a 40-line file, as a tool returns it (733 bytes, like the issue's).
fn observation() -> String {
    (1..=40)
        .map(|i| format!("     {i:>2}\titem {i:02} \"quoted\"\n"))
        .collect()
}

#[tokio::test]
async fn a_long_text_in_events_memory_and_exchanges_is_stored_once_and_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let session = new_session(&store).await;
    let (run, _) = store.begin_run(&session.id, "view it").await.unwrap();
    let text = observation();
    assert!(text.len() >= MIN_TEXT);
    let finished = json!({"type": "tool_call_finished", "observation": text});
    let step = json!({"type": "step_finished", "step": 1, "result": text});
    let message = Message::tool_message(text.clone(), "str_replace_editor", "v1");
    let request = json!({"new_messages": [{"role": "tool", "content": text}]});
    let mut writer = store.session_writer(&session.id);
    let batch = Batch {
        memory: vec![MemoryWrite::Put {
            seq: 0,
            message: serde_json::to_string(&message).unwrap(),
        }],
        events: vec![
            NewEvent::now(Some(run), EventKind::Agent, finished.clone()),
            NewEvent::now(Some(run), EventKind::Agent, step.clone()),
        ],
        exchanges: vec![NewExchange {
            run_id: Some(run),
            stream: 7,
            seq: 0,
            part: ExchangePart::Request,
            at: 1,
            data: request.clone().into(),
        }],
    };
    writer.write(batch).await.unwrap();
    // A later batch of another writer (a resumed session) names the same text again.
    store
        .append_event(
            &session.id,
            NewEvent::now(Some(run), EventKind::Agent, finished.clone()),
        )
        .await
        .unwrap();

    assert_eq!(rows(dir.path(), "texts").await, 1);
    let events = store.events_after(&session.id, None, 100).await.unwrap();
    let data: Vec<&Value> = events.iter().map(|e| &e.data).collect();
    assert_eq!(data[1..], [&finished, &step, &finished]);
    assert_eq!(store.messages(&session.id).await.unwrap(), [message]);
    let exchanges = store.exchanges_after(&session.id, None, 10).await.unwrap();
    assert_eq!(exchanges.len(), 1);
    assert_eq!(exchanges[0].data, request);
    assert_eq!(exchanges[0].stream, 7);
    // Stored bytes: the text once, the rows each a short reference.
    let url = format!("sqlite://{}", dir.path().join("sessions.db").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let longest: i64 = sqlx::query_scalar("SELECT MAX(length(data)) FROM events")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert!(
        longest < 200,
        "an event row holds the text: {longest} bytes"
    );
}

#[tokio::test]
async fn exchanges_read_back_in_request_order_after_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let session = new_session(&store).await;
    assert_eq!(store.next_exchange_seq(&session.id).await.unwrap(), 0);
    let exchange = |seq, part, data: Value| NewExchange {
        run_id: None,
        stream: 1,
        seq,
        part,
        at: seq,
        data: data.into(),
    };
    // Written out of order: a reply can reach the writer in a later batch than its request.
    for batch in [
        vec![
            exchange(0, ExchangePart::Request, json!({"n": 0})),
            exchange(1, ExchangePart::Request, json!({"n": 1})),
        ],
        vec![
            exchange(1, ExchangePart::Error, json!({"error": "down"})),
            exchange(0, ExchangePart::Reply, json!({"response": {}})),
        ],
    ] {
        let batch = Batch {
            exchanges: batch,
            ..Batch::default()
        };
        store.write_batch(&session.id, batch).await.unwrap();
    }
    let all = store.exchanges_after(&session.id, None, 10).await.unwrap();
    let order: Vec<(i64, ExchangePart)> = all.iter().map(|e| (e.seq, e.part)).collect();
    assert_eq!(
        order,
        [
            (0, ExchangePart::Request),
            (0, ExchangePart::Reply),
            (1, ExchangePart::Request),
            (1, ExchangePart::Error),
        ]
    );
    let after = store
        .exchanges_after(&session.id, Some(0), 10)
        .await
        .unwrap();
    assert_eq!(after, all[2..]);
    assert_eq!(
        store.exchanges_after(&session.id, None, 1).await.unwrap(),
        all[..1]
    );
    assert_eq!(store.next_exchange_seq(&session.id).await.unwrap(), 2);
    // Deleting the session takes its exchanges and texts with it.
    assert!(store.delete_session(&session.id).await.unwrap());
    assert_eq!(rows(dir.path(), "exchanges").await, 0);
}

#[tokio::test]
async fn a_run_text_in_parts_reads_back_whole_and_stores_each_step_result_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let session = new_session(&store).await;
    let result = observation();
    let parts = vec![
        "Step 1: ".to_owned(),
        result.clone(),
        "\nStep 2: ".to_owned(),
        result.clone(),
    ];
    let text = parts.concat();
    let summary = |text: &str, parts: Option<Vec<String>>| RunSummary {
        state: RunState::Finished,
        status: "finished".into(),
        answer: None,
        text: text.to_owned(),
        text_parts: parts,
        changes: Value::Null,
        usage: TokenUsage::default(),
    };
    let (run, _) = store.begin_run(&session.id, "t").await.unwrap();
    store
        .append_event(
            &session.id,
            NewEvent::now(Some(run), EventKind::Agent, json!({"result": result})),
        )
        .await
        .unwrap();
    store
        .finish_run(run, &summary(&text, Some(parts.clone())))
        .await
        .unwrap();
    assert_eq!(store.run(run).await.unwrap().text.as_deref(), Some(&*text));
    assert_eq!(rows(dir.path(), "texts").await, 1);

    // Parts that do not make up the text are not used: the text is kept whole.
    let (other, _) = store.begin_run(&session.id, "t").await.unwrap();
    store
        .finish_run(other, &summary("something else", Some(parts)))
        .await
        .unwrap();
    let runs = store.runs(&session.id).await.unwrap();
    let texts: Vec<Option<&str>> = runs.iter().map(|r| r.text.as_deref()).collect();
    assert_eq!(texts, [Some(&*text), Some("something else")]);
}

#[tokio::test]
async fn a_batch_that_failed_does_not_leave_its_texts_referred_to_but_unwritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let session = new_session(&store).await;
    let data = json!({"observation": observation()});
    let mut writer = store.session_writer(&session.id);
    // No run 999999: the foreign key fails the whole batch, its text included.
    let failing = Batch {
        events: vec![NewEvent::now(Some(999_999), EventKind::Agent, data.clone())],
        ..Batch::default()
    };
    assert!(writer.write(failing).await.is_err());
    let batch = Batch {
        events: vec![NewEvent::now(None, EventKind::Agent, data.clone())],
        ..Batch::default()
    };
    writer.write(batch).await.unwrap();
    let events = store.events_after(&session.id, None, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data, data);
}

#[tokio::test]
async fn a_store_of_the_2026_12_format_opens_reads_back_unchanged_and_goes_on() {
    // Written by `openmanus demo` before the texts, exchanges and parts existed; the JSON dump
    // beside it was read from its tables with SQLite itself.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures.join("sessions-2026-12.db"),
        dir.path().join("sessions.db"),
    )
    .unwrap();
    let dump: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("sessions-2026-12.json")).unwrap(),
    )
    .unwrap();
    let store = file_store(dir.path()).await;
    let sessions = store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    let id = sessions[0].id.clone();
    assert_eq!(json!(id), dump["sessions"][0]["id"]);
    assert_eq!(json!(sessions[0].title), dump["sessions"][0]["title"]);

    let runs = store.runs(&id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(json!(runs[0].task), dump["runs"][0]["task"]);
    assert_eq!(json!(runs[0].text), dump["runs"][0]["text"]);
    assert_eq!(json!(runs[0].answer), dump["runs"][0]["answer"]);

    let events = store.events_after(&id, None, 1000).await.unwrap();
    let read: Vec<Value> = events
        .iter()
        .map(|e| json!({"id": e.id, "kind": e.kind.as_str(), "data": e.data}))
        .collect();
    assert_eq!(json!(read), dump["events"]);
    let messages = store.messages(&id).await.unwrap();
    assert_eq!(serde_json::to_value(&messages).unwrap(), dump["messages"]);
    assert_eq!(store.restore_memory(&id).await.unwrap(), messages);

    // The session goes on: new rows (with references) after the old ones, ids still growing.
    let last = events.last().unwrap().id;
    let (run, _) = store.begin_run(&id, "again").await.unwrap();
    let data = json!({"type": "tool_call_finished", "observation": observation()});
    store
        .append_event(
            &id,
            NewEvent::now(Some(run), EventKind::Agent, data.clone()),
        )
        .await
        .unwrap();
    let after = store.events_after(&id, Some(last), 10).await.unwrap();
    assert_eq!(after.len(), 2);
    assert!(after[0].id > last);
    assert_eq!(after[1].data, data);
    let all = store.events_after(&id, None, 1000).await.unwrap();
    assert_eq!(all[..events.len()], events[..]);
}

#[tokio::test]
async fn batches_of_one_shape_are_written_again_and_again_even_after_one_failed() {
    // A batch's script is kept prepared by its shape: the same shape, rows of other values,
    // must write those values, and a failure half-way must not leave the kept script unusable.
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(dir.path()).await;
    let session = new_session(&store).await;
    let mut writer = store.session_writer(&session.id);
    let shaped = |step: u64, run: Option<i64>| Batch {
        memory: vec![
            MemoryWrite::Put {
                seq: 2 * step,
                message: json!({"role": "assistant", "content": format!("step {step}")})
                    .to_string(),
            },
            MemoryWrite::Put {
                seq: 2 * step + 1,
                message: json!({"role": "user", "content": format!("seen {step}")}).to_string(),
            },
        ],
        events: vec![
            NewEvent::now(
                run,
                EventKind::Agent,
                json!({"type": "step_started", "step": step}),
            ),
            NewEvent::now(
                run,
                EventKind::Agent,
                json!({"type": "step_finished", "step": step}),
            ),
        ],
        ..Batch::default()
    };
    let mut ids = Vec::new();
    for step in 0..3 {
        ids.extend_from_slice(writer.write(shaped(step, None)).await.unwrap().ids());
    }
    // No run 999999: the foreign key fails the batch after its messages were written.
    assert!(writer.write(shaped(3, Some(999_999))).await.is_err());
    for step in 3..5 {
        ids.extend_from_slice(writer.write(shaped(step, None)).await.unwrap().ids());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let events = store.events_after(&session.id, None, 100).await.unwrap();
    let steps: Vec<(i64, Value)> = events
        .iter()
        .map(|e| (e.id, e.data["step"].clone()))
        .collect();
    let expected: Vec<(i64, Value)> = ids
        .iter()
        .zip([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
        .map(|(&id, step)| (id, json!(step)))
        .collect();
    assert_eq!(steps, expected);
    let memory = store.messages(&session.id).await.unwrap();
    let contents: Vec<String> = memory.iter().map(|m| m.text().to_owned()).collect();
    assert_eq!(
        contents,
        [
            "step 0", "seen 0", "step 1", "seen 1", "step 2", "seen 2", "step 3", "seen 3",
            "step 4", "seen 4"
        ]
    );
}
