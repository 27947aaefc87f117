//! The store against real SQLite files in temporary directories: ids, ordering, cascades,
//! transactions, interrupted runs and turn-safe restores.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cases;

use agent_store::Store;

async fn file_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    // A directory that does not exist yet: open creates it.
    let store = Store::open(dir.path().join("nested/.openmanus/sessions.db"))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test]
async fn event_ids_grow_across_sessions_and_reads_resume_after_any_id() {
    let (_dir, store) = file_store().await;
    cases::event_ids_grow_across_sessions_and_reads_resume_after_any_id(&store).await;
}

#[tokio::test]
async fn a_batch_dropped_half_way_leaves_no_transaction_open() {
    let (_dir, store) = file_store().await;
    cases::a_batch_dropped_half_way_leaves_no_transaction_open(&store).await;
}

#[tokio::test]
async fn memory_writes_put_replace_and_remove_in_order() {
    let (_dir, store) = file_store().await;
    cases::memory_writes_put_replace_and_remove_in_order(&store).await;
}

#[tokio::test]
async fn a_restored_memory_answers_every_call_and_drops_orphan_results() {
    let (_dir, store) = file_store().await;
    cases::a_restored_memory_answers_every_call_and_drops_orphan_results(&store).await;
}

#[tokio::test]
async fn a_large_batch_keeps_every_event_and_message_in_order() {
    let (_dir, store) = file_store().await;
    cases::a_large_batch_keeps_every_event_and_message_in_order(&store).await;
}

#[tokio::test]
async fn a_batch_is_all_or_nothing() {
    let (_dir, store) = file_store().await;
    cases::a_batch_is_all_or_nothing(&store).await;
    // The in-memory store has one connection: a transaction left open on it would fail the
    // next batch at once.
    cases::a_batch_is_all_or_nothing(&Store::open_memory().await.unwrap()).await;
}

#[tokio::test]
async fn sessions_list_newest_first_resolve_by_prefix_and_delete_with_everything() {
    let (dir, store) = file_store().await;
    let old =
        cases::sessions_list_newest_first_resolve_by_prefix_and_delete_with_everything(&store)
            .await;
    // Checked in the file itself, by another connection: nothing of the session is left.
    let path = dir.path().join("nested/.openmanus/sessions.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    for table in ["runs", "events", "messages"] {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE session_id = ?"
        ))
        .bind(&old)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(n, 0, "{table}");
    }
}

#[tokio::test]
async fn an_in_memory_store_works_and_unknown_ids_are_errors() {
    let store = Store::open_memory().await.unwrap();
    assert!(store.path().is_none());
    cases::unknown_ids_are_errors(&store).await;
}

#[tokio::test]
async fn stores_opened_at_once_on_a_new_file_all_migrate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            tokio::spawn(async move { Store::open(path).await })
        })
        .collect();
    for open in opens {
        let store = open.await.unwrap().unwrap();
        store.list_sessions().await.unwrap();
    }
}

#[tokio::test]
async fn a_run_whose_process_died_is_shown_interrupted_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).await.unwrap();
    cases::a_run_whose_process_died_is_shown_interrupted_after_a_reopen(
        store,
        async |dead| {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
                .await
                .unwrap();
            sqlx::query("UPDATE runs SET owner = '4194305:1' WHERE id = ?")
                .bind(dead)
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
        },
        async || Store::open(&path).await.unwrap(),
    )
    .await;
}

#[tokio::test]
async fn a_session_runs_one_task_at_a_time() {
    let (_dir, store) = file_store().await;
    cases::a_session_runs_one_task_at_a_time(&store).await;
}

#[tokio::test]
async fn a_run_of_another_boot_without_a_lease_is_interrupted() {
    // A file store copied to another machine, or opened after a reboot: its running runs'
    // processes are gone.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).await.unwrap();
    let s = store
        .create_session(agent_store::NewSession::new("manus", "/w"))
        .await
        .unwrap();
    let (run, _) = store.begin_run(&s.id, "before the reboot").await.unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE runs SET owner = '1:1@an-earlier-boot/pid:[1]' WHERE id = ?")
        .bind(run)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(store.mark_interrupted_runs().await.unwrap(), [run]);
    assert_eq!(
        store.run(run).await.unwrap().state,
        agent_store::RunState::Interrupted
    );
}

#[tokio::test]
async fn a_task_is_stored_replaced_listed_and_outlives_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).await.unwrap();
    cases::a_task_is_stored_replaced_listed_and_outlives_the_process(store, async || {
        Store::open(&path).await.unwrap()
    })
    .await;
}
