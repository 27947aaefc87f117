//! A protocol's tasks in a real SQLite file: stored, replaced, listed, their push settings,
//! kept across a reopening and gone with their session.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_store::{NewSession, Store, StoreError};
use serde_json::json;

#[tokio::test]
async fn a_task_is_stored_replaced_listed_and_outlives_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).await.unwrap();
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

    let store = Store::open(&path).await.unwrap();
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
