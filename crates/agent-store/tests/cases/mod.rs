//! The store's cases, run on every database it can be kept in: SQLite (`store.rs`) and
//! PostgreSQL (`postgres.rs`). Each takes a new, empty store.

// Not every test binary runs every case.
#![allow(dead_code)]

use agent_core::{Message, Role, ToolCall, cancelled_observation, check_tool_pairing};
use agent_store::{
    Batch, EventKind, MemoryWrite, NewEvent, NewSession, RunState, RunSummary, SessionState, Store,
    StoreError, TokenUsage,
};
use serde_json::{Value, json};

pub fn event(run: Option<i64>, n: u64) -> NewEvent {
    NewEvent::now(
        run,
        EventKind::Agent,
        json!({"type": "step_started", "step": n}),
    )
}

pub fn put(seq: u64, message: &Message) -> MemoryWrite {
    MemoryWrite::Put {
        seq,
        message: serde_json::to_string(message).unwrap(),
    }
}

pub fn summary(state: RunState) -> RunSummary {
    RunSummary {
        state,
        status: state.to_string(),
        answer: Some("42".into()),
        text: "Step 1: done".into(),
        text_parts: None,
        changes: json!({"created": ["a.txt"]}),
        usage: TokenUsage {
            prompt_tokens: 10,
            cached_prompt_tokens: 4,
            completion_tokens: 3,
            cost_usd: Some(0.0125),
            ..TokenUsage::default()
        },
    }
}

pub async fn event_ids_grow_across_sessions_and_reads_resume_after_any_id(store: &Store) {
    let a = store
        .create_session(NewSession::new("manus", "/w/a"))
        .await
        .unwrap();
    let b = store
        .create_session(NewSession::new("swe", "/w/b"))
        .await
        .unwrap();
    let (run, started) = store.begin_run(&a.id, "task a").await.unwrap();
    let mut ids = vec![started.id];
    for n in 0..5 {
        let batch = Batch {
            memory: Vec::new(),
            events: vec![event(Some(run), n), event(Some(run), n + 100)],
            ..Batch::default()
        };
        ids.extend(
            store
                .write_batch(&a.id, batch)
                .await
                .unwrap()
                .iter()
                .map(|e| e.id),
        );
        store.append_event(&b.id, event(None, n)).await.unwrap();
    }
    let finished = store
        .finish_run(run, &summary(RunState::Finished))
        .await
        .unwrap();
    ids.push(finished.id);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    let all = store.events_after(&a.id, None, 1000).await.unwrap();
    assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    assert_eq!(all[0].kind, EventKind::RunStarted);
    assert_eq!(all[0].data, json!({"run_id": run, "task": "task a"}));
    assert_eq!(all[1].data["step"], 0);
    assert_eq!(all[2].data["step"], 100);
    assert_eq!(all.last().unwrap().kind, EventKind::RunFinished);
    assert_eq!(all.last().unwrap().data["answer"], "42");
    assert!(
        all.iter()
            .all(|e| e.run_id == Some(run) && e.session_id == a.id)
    );

    // Replay from any id: exactly the later ones, in pages.
    let after = store.events_after(&a.id, Some(ids[3]), 4).await.unwrap();
    assert_eq!(after.iter().map(|e| e.id).collect::<Vec<_>>(), ids[4..8]);
    assert_eq!(
        store.last_event_id(&a.id).await.unwrap(),
        ids.last().copied()
    );
    assert_eq!(store.events_after(&b.id, None, 100).await.unwrap().len(), 5);
    assert_eq!(store.event_count(&b.id).await.unwrap(), 5);

    let run = store.run(run).await.unwrap();
    assert_eq!(run.state, RunState::Finished);
    assert_eq!(run.answer.as_deref(), Some("42"));
    assert_eq!(run.usage.completion_tokens, 3);
    assert_eq!(run.usage.cached_prompt_tokens, 4);
    assert_eq!(run.usage.cost_usd, Some(0.0125));
    assert_eq!(run.changes, json!({"created": ["a.txt"]}));
    assert!(run.finished_at.is_some());
    let a = store.session(&a.id).await.unwrap();
    assert_eq!(a.state, SessionState::Finished);
    assert_eq!(a.title, "task a");
    assert_eq!(a.runs, 1);
}

pub async fn a_batch_dropped_half_way_leaves_no_transaction_open(store: &Store) {
    let session = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    for n in 0..5 {
        // Polled once, then dropped: the call may have reached sqlx's thread, which then
        // begins the transaction and stops before the COMMIT when nobody takes the result.
        let batch = Batch {
            memory: vec![put(n, &Message::user_message("dropped"))],
            events: vec![event(None, n)],
            ..Batch::default()
        };
        let _ = tokio::time::timeout(
            std::time::Duration::ZERO,
            store.write_batch(&session.id, batch),
        )
        .await;
        // The next batch is written: no connection was returned to the pool holding the write
        // lock (it would wait out the busy timeout and fail).
        let batch = Batch {
            memory: vec![put(100 + n, &Message::user_message("kept"))],
            events: vec![event(None, 100 + n)],
            ..Batch::default()
        };
        store.write_batch(&session.id, batch).await.unwrap();
    }
    let kept = store.messages(&session.id).await.unwrap();
    assert_eq!(kept.iter().filter(|m| m.text() == "kept").count(), 5);
}

pub async fn memory_writes_put_replace_and_remove_in_order(store: &Store) {
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let batch = Batch {
        memory: vec![
            put(0, &Message::user_message("task")),
            put(1, &Message::assistant_message("one")),
            put(2, &Message::assistant_message("two")),
            put(2, &Message::assistant_message("two, edited")),
            MemoryWrite::Remove { seqs: vec![1] },
            put(3, &Message::assistant_message("three")),
        ],
        events: Vec::new(),
        ..Batch::default()
    };
    store.write_batch(&s.id, batch).await.unwrap();
    let texts: Vec<String> = store
        .messages(&s.id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.text().to_owned())
        .collect();
    assert_eq!(texts, ["task", "two, edited", "three"]);
    store
        .replace_messages(&s.id, [(7, &Message::user_message("fresh"))])
        .await
        .unwrap();
    assert_eq!(
        store.messages(&s.id).await.unwrap(),
        [Message::user_message("fresh")]
    );
}

pub async fn a_restored_memory_answers_every_call_and_drops_orphan_results(store: &Store) {
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let a = ToolCall::new("a", "bash", "{}");
    let b = ToolCall::new("b", "python_execute", "{}");
    let c = ToolCall::new("c", "browser_use", "{}");
    let stored = [
        Message::user_message("task"),
        Message::from_tool_calls(vec![a.clone(), b.clone()], "two calls"),
        Message::tool_message("a done", "bash", "a"),
        // b was never answered: the process died while it ran; then a later turn came.
        Message::user_message("next task"),
        Message::tool_message("stray", "bash", "zz"),
        Message::from_tool_calls(vec![c.clone()], ""),
        // The newest call is left open too (killed mid-tool).
    ];
    let batch = Batch {
        memory: stored
            .iter()
            .enumerate()
            .map(|(i, m)| put(i as u64, m))
            .collect(),
        events: Vec::new(),
        ..Batch::default()
    };
    store.write_batch(&s.id, batch).await.unwrap();
    assert_eq!(store.messages(&s.id).await.unwrap(), stored);
    assert!(check_tool_pairing(&stored, false).is_err());

    let restored = store.restore_memory(&s.id).await.unwrap();
    check_tool_pairing(&restored, false).unwrap();
    let expected = [
        stored[0].clone(),
        stored[1].clone(),
        stored[2].clone(),
        Message::tool_message(cancelled_observation(&b), "python_execute", "b"),
        stored[3].clone(),
        stored[5].clone(),
        Message::tool_message(cancelled_observation(&c), "browser_use", "c"),
    ];
    assert_eq!(restored, expected);
    assert_eq!(
        restored[3].text(),
        "Error: Tool 'python_execute' did not complete: the run was cancelled"
    );
    assert!(
        restored
            .iter()
            .all(|m| m.role != Role::Tool || m.text() != "stray")
    );
}

pub async fn a_large_batch_keeps_every_event_and_message_in_order(store: &Store) {
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let messages: Vec<Message> = (0..600)
        .map(|n| Message::assistant_message(format!("m{n}")))
        .collect();
    let mut memory: Vec<MemoryWrite> = messages
        .iter()
        .enumerate()
        .map(|(n, m)| put(n as u64, m))
        .collect();
    memory.push(MemoryWrite::Remove {
        seqs: (0..300).collect(),
    });
    let batch = Batch {
        memory,
        events: (0..700).map(|n| event(None, n)).collect(),
        ..Batch::default()
    };
    let stored = store.write_batch(&s.id, batch).await.unwrap();
    assert_eq!(stored.len(), 700);
    for (n, event) in stored.iter().enumerate() {
        assert_eq!(event.data["step"], n, "the id order is the event order");
    }
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(store.events_after(&s.id, None, 1000).await.unwrap(), stored);
    assert_eq!(store.messages(&s.id).await.unwrap(), messages[300..]);
}

pub async fn a_batch_is_all_or_nothing(store: &Store) {
    let session = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    store
        .write_batch(
            &session.id,
            Batch {
                memory: vec![put(0, &Message::user_message("task"))],
                events: vec![event(None, 1)],
                ..Batch::default()
            },
        )
        .await
        .unwrap();
    // The second event names a run that does not exist: the foreign key fails it, and the
    // message and the first event of the same batch are not written either.
    let failing = Batch {
        memory: vec![put(1, &Message::assistant_message("half"))],
        events: vec![event(None, 2), event(Some(999_999), 3)],
        ..Batch::default()
    };
    assert!(store.write_batch(&session.id, failing).await.is_err());
    assert_eq!(store.messages(&session.id).await.unwrap().len(), 1);
    assert_eq!(
        store
            .events_after(&session.id, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    // The failed batch's transaction was rolled back, not left holding the write lock: the
    // next batch is written (a leaked transaction would make it wait out the busy timeout and
    // fail).
    store
        .write_batch(
            &session.id,
            Batch {
                memory: vec![put(1, &Message::assistant_message("whole"))],
                events: vec![event(None, 5)],
                ..Batch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(store.messages(&session.id).await.unwrap().len(), 2);
    // A batch for a session that does not exist writes nothing.
    assert!(
        store
            .write_batch(
                "nobody",
                Batch {
                    memory: Vec::new(),
                    events: vec![event(None, 4)],
                    ..Batch::default()
                }
            )
            .await
            .is_err()
    );
}

/// Returns the deleted session's id (the caller checks nothing of it is left).
pub async fn sessions_list_newest_first_resolve_by_prefix_and_delete_with_everything(
    store: &Store,
) -> String {
    let old = store
        .create_session(
            NewSession::new("manus", "/w/old")
                .with_id("aaaa-1")
                .with_settings(json!({"max_steps": 3})),
        )
        .await
        .unwrap();
    let new = store
        .create_session(NewSession::new("flow", "/w/new").with_id("aaab-2"))
        .await
        .unwrap();
    assert_eq!(old.settings, json!({"max_steps": 3}));
    assert_eq!(old.state, SessionState::Idle);
    let listed: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["aaab-2", "aaaa-1"]);
    // A run makes the old one the latest.
    let (run, _) = store.begin_run(&old.id, "again").await.unwrap();
    assert_eq!(store.latest_session().await.unwrap().unwrap().id, old.id);

    assert_eq!(store.find_session("aaab").await.unwrap().id, new.id);
    assert!(matches!(
        store.find_session("aaa").await,
        Err(StoreError::Ambiguous { count: 2, .. })
    ));
    assert!(matches!(
        store.find_session("zz").await,
        Err(StoreError::NoSession(_))
    ));
    assert!(matches!(
        store.find_session("a%").await,
        Err(StoreError::NoSession(_))
    ));

    let batch = Batch {
        memory: vec![put(0, &Message::user_message("again"))],
        events: vec![event(Some(run), 1)],
        ..Batch::default()
    };
    store.write_batch(&old.id, batch).await.unwrap();
    assert!(store.delete_session(&old.id).await.unwrap());
    assert!(!store.delete_session(&old.id).await.unwrap());
    assert!(matches!(
        store.session(&old.id).await,
        Err(StoreError::NoSession(_))
    ));
    assert!(
        store
            .events_after(&old.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.messages(&old.id).await.unwrap().is_empty());
    assert!(matches!(store.run(run).await, Err(StoreError::NoRun(_))));
    old.id
}

pub async fn unknown_ids_are_errors(store: &Store) {
    assert!(matches!(
        store.session("x").await,
        Err(StoreError::NoSession(_))
    ));
    assert!(matches!(
        store.begin_run("x", "t").await,
        Err(StoreError::NoSession(_))
    ));
    assert!(matches!(
        store.finish_run(42, &summary(RunState::Failed)).await,
        Err(StoreError::NoRun(42))
    ));
    assert!(matches!(
        store.set_state("x", SessionState::Idle).await,
        Err(StoreError::NoSession(_))
    ));
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    assert_eq!(s.id.len(), 36, "a UUID");
    store.set_state(&s.id, SessionState::Failed).await.unwrap();
    assert_eq!(
        store.session(&s.id).await.unwrap().state,
        SessionState::Failed
    );
    assert!(matches!(
        store.set_agent("x", "swe").await,
        Err(StoreError::NoSession(_))
    ));
    store.set_agent(&s.id, "swe").await.unwrap();
    let record = store.session(&s.id).await.unwrap();
    assert_eq!(
        (record.agent.as_str(), record.state),
        ("swe", SessionState::Failed)
    );
}

/// `mark_dead` makes a run look like one of a process that is gone (with the store closed);
/// `reopen` opens the store again.
pub async fn a_run_whose_process_died_is_shown_interrupted_after_a_reopen(
    store: Store,
    mark_dead: impl AsyncFnOnce(i64),
    reopen: impl AsyncFnOnce() -> Store,
) {
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let (dead, _) = store.begin_run(&s.id, "killed").await.unwrap();
    for (prompt, cached, completion, cost) in [(7, 3, 2, 0.25), (1, 0, 1, 0.5)] {
        let usage = json!({"type": "token_usage", "prompt_tokens": prompt,
            "cached_prompt_tokens": cached, "completion_tokens": completion, "cost_usd": cost});
        store
            .append_event(&s.id, NewEvent::now(Some(dead), EventKind::Agent, usage))
            .await
            .unwrap();
    }
    let other = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let (alive, _) = store.begin_run(&other.id, "still running").await.unwrap();
    // This process is alive: nothing to mark.
    assert!(store.mark_interrupted_runs().await.unwrap().is_empty());
    store.close().await;

    // Make the first run look like one of a process that is gone.
    mark_dead(dead).await;

    let store = reopen().await;
    let run = store.run(dead).await.unwrap();
    assert_eq!(run.state, RunState::Interrupted);
    assert_eq!(
        run.usage.prompt_tokens, 8,
        "usage is added up from the events"
    );
    assert_eq!(run.usage.cached_prompt_tokens, 3);
    assert_eq!(run.usage.cost_usd, Some(0.75), "and so is the cost");
    assert_eq!(
        store.session(&s.id).await.unwrap().state,
        SessionState::Interrupted
    );
    let last = store.events_after(&s.id, None, 10).await.unwrap();
    assert_eq!(last.last().unwrap().kind, EventKind::RunFinished);
    assert_eq!(
        last.last().unwrap().data["state"],
        Value::from("interrupted")
    );
    assert_eq!(store.run(alive).await.unwrap().state, RunState::Running);
    assert_eq!(
        store.session(&other.id).await.unwrap().state,
        SessionState::Running
    );
}

pub async fn a_session_runs_one_task_at_a_time(store: &Store) {
    let s = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let (run, _) = store.begin_run(&s.id, "first").await.unwrap();
    match store.begin_run(&s.id, "second").await {
        Err(StoreError::Running {
            session,
            run: going,
        }) => {
            assert_eq!(session, s.id);
            assert_eq!(going, run);
        }
        other => panic!("a second run began: {other:?}"),
    }
    store
        .finish_run(run, &summary(RunState::Finished))
        .await
        .unwrap();
    let (next, _) = store.begin_run(&s.id, "second").await.unwrap();
    assert!(next > run);
    assert_eq!(store.runs(&s.id).await.unwrap().len(), 2);
}

/// `reopen` opens the store again (after `store` was closed).
pub async fn a_task_is_stored_replaced_listed_and_outlives_the_process(
    store: Store,
    reopen: impl AsyncFnOnce() -> Store,
) {
    let a = store
        .create_session(NewSession::new("manus", "/tmp/a"))
        .await
        .unwrap();
    let b = store
        .create_session(NewSession::new("manus", "/tmp/b"))
        .await
        .unwrap();

    let working = json!({"id": "t1", "status": {"state": "working"}});
    store
        .put_task("t1", &a.id, "a2a", "working", &working)
        .await
        .unwrap();
    store
        .set_task_push("t1", &[json!({"url": "http://127.0.0.1:9/hook"})])
        .await
        .unwrap();
    let done = json!({"id": "t1", "status": {"state": "completed"}, "artifacts": [1]});
    store
        .put_task("t1", &a.id, "a2a", "completed", &done)
        .await
        .unwrap();
    store
        .put_task("t2", &b.id, "a2a", "submitted", &json!({"id": "t2"}))
        .await
        .unwrap();
    store.close().await;

    let store = reopen().await;
    let t1 = store.task("t1").await.unwrap().unwrap();
    assert_eq!(t1.session_id, a.id);
    assert_eq!(t1.protocol, "a2a");
    assert_eq!(t1.state, "completed");
    assert_eq!(t1.body, done, "the last write wins");
    assert_eq!(t1.push, [json!({"url": "http://127.0.0.1:9/hook"})], "kept");
    assert!(t1.updated_at >= t1.created_at);

    let all: Vec<String> = store
        .tasks("a2a", None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(all, ["t1", "t2"]);
    let of_b = store.tasks("a2a", Some(&b.id), 10).await.unwrap();
    assert_eq!(of_b.len(), 1);
    assert_eq!(of_b[0].id, "t2");
    assert!(store.tasks("acp", None, 10).await.unwrap().is_empty());
    let newest = store.tasks("a2a", None, 1).await.unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].id, "t2", "a limit keeps the newest");

    assert!(store.task("nope").await.unwrap().is_none());
    assert!(matches!(
        store
            .put_task("t3", "no-such-session", "a2a", "working", &json!({}))
            .await,
        Err(StoreError::NoSession(_))
    ));
    assert!(matches!(
        store.set_task_push("nope", &[]).await,
        Err(StoreError::NoTask(_))
    ));

    // A session's tasks go with it.
    assert!(store.delete_session(&a.id).await.unwrap());
    assert!(store.task("t1").await.unwrap().is_none());
    assert!(store.task("t2").await.unwrap().is_some());
}
