//! The store on a real PostgreSQL server (Debian's `postgresql`, started by the test kit on
//! 127.0.0.1): every case of `store.rs`, each on a database of its own, then what only a shared
//! database has — stores of several processes at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cases;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_store::{Batch, NewSession, RunState, Store, StoreError, StoreNotice};
use agent_testkit::PgCluster;
use serde_json::json;

/// A cluster for one test (initdb takes a second or two; every case gets a database on it).
fn cluster() -> PgCluster {
    PgCluster::start().expect("PostgreSQL (`cargo xtask setup` installs it)")
}

async fn store_on(cluster: &PgCluster, name: &str) -> (String, Store) {
    let url = cluster.create_database(name).unwrap();
    let store = Store::connect(&url).await.unwrap();
    assert!(store.is_shared());
    assert!(store.path().is_none());
    (url, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_case_holds_on_postgres() {
    let cluster = cluster();

    let (_, store) = store_on(&cluster, "ids").await;
    cases::event_ids_grow_across_sessions_and_reads_resume_after_any_id(&store).await;
    let (_, store) = store_on(&cluster, "dropped").await;
    cases::a_batch_dropped_half_way_leaves_no_transaction_open(&store).await;
    let (_, store) = store_on(&cluster, "memory").await;
    cases::memory_writes_put_replace_and_remove_in_order(&store).await;
    let (_, store) = store_on(&cluster, "restored").await;
    cases::a_restored_memory_answers_every_call_and_drops_orphan_results(&store).await;
    let (_, store) = store_on(&cluster, "large").await;
    cases::a_large_batch_keeps_every_event_and_message_in_order(&store).await;
    let (_, store) = store_on(&cluster, "all_or_nothing").await;
    cases::a_batch_is_all_or_nothing(&store).await;
    let (_, store) = store_on(&cluster, "unknown").await;
    cases::unknown_ids_are_errors(&store).await;
    let (_, store) = store_on(&cluster, "one_run").await;
    cases::a_session_runs_one_task_at_a_time(&store).await;
    let (url, store) = store_on(&cluster, "tasks").await;
    cases::a_task_is_stored_replaced_listed_and_outlives_the_process(store, async || {
        Store::connect(&url).await.unwrap()
    })
    .await;

    let (url, store) = store_on(&cluster, "sessions").await;
    let old =
        cases::sessions_list_newest_first_resolve_by_prefix_and_delete_with_everything(&store)
            .await;
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    for table in ["runs", "events", "messages", "texts", "exchanges", "tasks"] {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE session_id = $1"
        ))
        .bind(&old)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(n, 0, "{table}");
    }
    pool.close().await;

    let (url, store) = store_on(&cluster, "interrupted").await;
    let again = url.clone();
    cases::a_run_whose_process_died_is_shown_interrupted_after_a_reopen(
        store,
        async |dead| {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            sqlx::query("UPDATE runs SET owner = '4194305:1' WHERE id = $1")
                .bind(dead)
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
        },
        async || Store::connect(&again).await.unwrap(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_a_nul_and_a_bad_url_on_postgres() {
    let cluster = cluster();
    let (_, store) = store_on(&cluster, "texts").await;
    let session = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    // PostgreSQL's text cannot hold NUL: a task with one is stored all the same.
    let (run, _) = store.begin_run(&session.id, "a\0b").await.unwrap();
    assert_eq!(store.run(run).await.unwrap().task, "a\u{fffd}b");
    // A long text with a NUL in JSON (escaped) comes back as it went in, and is stored once.
    let long = format!("{}\0{}", "x".repeat(300), "y".repeat(300));
    let event = agent_store::NewEvent::now(
        Some(run),
        agent_store::EventKind::Agent,
        json!({"type": "tool_call_finished", "observation": long, "again": long}),
    );
    let stored = store.append_event(&session.id, event).await.unwrap();
    let back = store.events_after(&session.id, None, 10).await.unwrap();
    assert_eq!(back.last().unwrap(), &stored);
    assert_eq!(back.last().unwrap().data["observation"], long);
    let summary = agent_store::RunSummary {
        text_parts: Some(vec![long.clone(), "end".into()]),
        text: format!("{long}end"),
        ..cases::summary(RunState::Finished)
    };
    store.finish_run(run, &summary).await.unwrap();
    assert_eq!(
        store.run(run).await.unwrap().text.as_deref(),
        Some(summary.text.as_str())
    );

    // A server that is not there is reported as such, at once (not as a pool's timeout).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = Store::connect(&format!("postgres://me@127.0.0.1:{port}/db"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::Database(sqlx::Error::Io(_))),
        "{error:?}"
    );

    // A URL that is not one names the problem, without the password.
    let error = Store::connect("postgres://me:secret@127.0.0.1:notaport/db")
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, StoreError::Url { .. }), "{message}");
    assert!(!message.contains("secret"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_of_several_processes_share_one_database() {
    let cluster = cluster();
    let url = cluster.create_database("shared").unwrap();
    // Started together on a new database: sqlx's migration lock lets one create the schema.
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { Store::connect(&url).await })
        })
        .collect();
    let mut stores = Vec::new();
    for open in opens {
        stores.push(open.await.unwrap().unwrap());
    }
    let (a, b) = (stores[0].clone(), stores[1].clone());
    let session = a
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    assert_eq!(b.session(&session.id).await.unwrap().id, session.id);

    // Writers on two stores add events to one session while a reader on a third follows
    // with `events_after(last seen)`, as a `Last-Event-ID` reconnect does: the ids of a
    // session's events follow the order their transactions commit, so the reader never
    // passes an id whose event is not yet visible and misses nothing.
    const BATCHES: u64 = 60;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let store = stores[2].clone();
        let session = session.id.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let finished = done.load(Ordering::SeqCst);
                let page = store
                    .events_after(&session, seen.last().copied(), 1000)
                    .await
                    .unwrap();
                seen.extend(page.iter().map(|e| e.id));
                if finished {
                    return seen;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let writers: Vec<_> = [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .enumerate()
        .map(|(w, store)| {
            let session = session.id.clone();
            tokio::spawn(async move {
                let mut writer = store.session_writer(&session);
                let mut ids = Vec::new();
                for n in 0..BATCHES {
                    let batch = Batch {
                        events: vec![
                            cases::event(None, n * 10 + w as u64),
                            cases::event(None, n * 10 + w as u64),
                        ],
                        ..Batch::default()
                    };
                    ids.extend(writer.write(batch).await.unwrap().ids().iter().copied());
                }
                ids
            })
        })
        .collect();
    let mut written = BTreeSet::new();
    for writer in futures::future::join_all(writers).await {
        written.extend(writer.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let seen = reader.await.unwrap();
    assert_eq!(written.len(), 4 * 2 * BATCHES as usize);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order");
    let seen: BTreeSet<_> = seen.into_iter().collect();
    let missed: Vec<_> = written.difference(&seen).collect();
    assert!(missed.is_empty(), "the reader missed {missed:?}");
    assert_eq!(seen, written);

    // A run begun through one store is seen running through the other, which begins no
    // second one, and is ended there.
    let (run, _) = a.begin_run(&session.id, "shared").await.unwrap();
    assert_eq!(b.run(run).await.unwrap().state, RunState::Running);
    assert!(matches!(
        b.begin_run(&session.id, "meanwhile").await,
        Err(StoreError::Running { .. })
    ));
    b.finish_run(run, &cases::summary(RunState::Finished))
        .await
        .unwrap();
    assert_eq!(a.run(run).await.unwrap().state, RunState::Finished);
    for store in stores {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_store_hears_of_the_events_another_stores() {
    let cluster = cluster();
    let url = cluster.create_database("notices").unwrap();
    let (a, b) = (
        Store::connect(&url).await.unwrap(),
        Store::connect(&url).await.unwrap(),
    );
    let mut notices = b
        .notifications()
        .await
        .unwrap()
        .expect("PostgreSQL listens");
    let session = a
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let next = async |notices: &mut tokio::sync::broadcast::Receiver<StoreNotice>| {
        tokio::time::timeout(std::time::Duration::from_secs(60), notices.recv())
            .await
            .expect("a notice")
            .unwrap()
    };
    let (run, started) = a.begin_run(&session.id, "heard").await.unwrap();
    let heard = |last| StoreNotice::Events {
        session: session.id.clone(),
        last,
    };
    assert_eq!(next(&mut notices).await, heard(started.id));
    let batch = Batch {
        events: (0..3).map(|n| cases::event(Some(run), n)).collect(),
        ..Batch::default()
    };
    let stored = a.write_batch(&session.id, batch).await.unwrap();
    assert_eq!(next(&mut notices).await, heard(stored[2].id));
    // A batch of memory alone stores no event: no notice.
    let memory = Batch {
        memory: vec![cases::put(0, &agent_core::Message::user_message("m"))],
        ..Batch::default()
    };
    a.write_batch(&session.id, memory).await.unwrap();
    let finished = a
        .finish_run(run, &cases::summary(RunState::Finished))
        .await
        .unwrap();
    assert_eq!(next(&mut notices).await, heard(finished.id));
    // A second subscriber shares the one listening connection.
    let mut more = b.notifications().await.unwrap().unwrap();
    let event = a
        .append_event(&session.id, cases::event(None, 9))
        .await
        .unwrap();
    assert_eq!(next(&mut notices).await, heard(event.id));
    assert_eq!(next(&mut more).await, heard(event.id));
    // A cancel asked through one store is heard by the other (the process running the run).
    assert!(a.ask_cancel(&session.id).await.unwrap());
    assert_eq!(
        next(&mut notices).await,
        StoreNotice::Cancel {
            session: session.id.clone()
        }
    );
    // SQLite has no other process to hear or to ask.
    assert!(
        !Store::open_memory()
            .await
            .unwrap()
            .ask_cancel(&session.id)
            .await
            .unwrap()
    );
    assert!(
        Store::open_memory()
            .await
            .unwrap()
            .notifications()
            .await
            .unwrap()
            .is_none()
    );
    b.close().await;
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_another_host_lives_as_long_as_its_lease() {
    let cluster = cluster();
    let (url, store) = store_on(&cluster, "leases").await;
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let session = store
        .create_session(NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let (run, _) = store.begin_run(&session.id, "elsewhere").await.unwrap();
    // This process's run has a lease, renewed on demand (and every 10 s by itself).
    sqlx::query("UPDATE runs SET lease_until = 0 WHERE id = $1")
        .bind(run)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.renew_leases().await.unwrap(), 1);
    let lease: i64 = sqlx::query_scalar("SELECT lease_until FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(lease > agent_store::now_ms() + 20_000, "{lease}");

    // Now it is a process of another host, its lease running: alive, whatever this host's
    // /proc says of its pid.
    sqlx::query("UPDATE runs SET owner = '1:1@another-boot/pid:[1]' WHERE id = $1")
        .bind(run)
        .execute(&pool)
        .await
        .unwrap();
    assert!(store.mark_interrupted_runs().await.unwrap().is_empty());
    assert!(matches!(
        store.begin_run(&session.id, "meanwhile").await,
        Err(StoreError::Running { .. })
    ));
    // Its lease ran out (its host stopped renewing it): gone.
    sqlx::query("UPDATE runs SET lease_until = $1 WHERE id = $2")
        .bind(agent_store::now_ms() - 1)
        .bind(run)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.mark_interrupted_runs().await.unwrap(), [run]);
    assert_eq!(store.run(run).await.unwrap().state, RunState::Interrupted);
    store.begin_run(&session.id, "now").await.unwrap();
    pool.close().await;
    store.close().await;
}
