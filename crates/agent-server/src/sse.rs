//! A session's events as Server-Sent Events: first what the store holds after the client's
//! `Last-Event-ID` (or `?after=`), then every event as it is stored, each with its store id, so
//! that a reload or a dropped connection misses nothing and sees nothing twice; between them,
//! the server's live notices (status) without ids.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agent_store::{EventId, EventKind, StoredEvent};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::hub::Hub;
use crate::markdown::to_safe_html;
use crate::notice::Notice;

/// Events read from the store per query while replaying.
const PAGE: usize = 500;

/// The SSE response for session `id`, starting after event `after`.
pub fn stream(
    hub: Arc<Hub>,
    id: String,
    after: Option<EventId>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // Subscribed before the replay: an event stored meanwhile is in the store or on the
    // stream (or both; the id filter drops the copy).
    let live = hub.stream(&id).subscribe();
    let (sender, receiver) = mpsc::channel::<Event>(64);
    let mut closing = hub.closing();
    tokio::spawn(async move {
        tokio::select! {
            () = pump(hub, id, after, live, sender) => {}
            _ = closing.wait_for(|closing| *closing) => {}
        }
    });
    let events = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok(event), receiver))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Sends the replay, then the live stream, until the client goes away.
async fn pump(
    hub: Arc<Hub>,
    id: String,
    after: Option<EventId>,
    mut live: broadcast::Receiver<Notice>,
    sender: mpsc::Sender<Event>,
) {
    let mut last = after.unwrap_or(0);
    if replay(&hub, &id, &mut last, &sender).await.is_err() {
        return;
    }
    let status = hub
        .live(&id)
        .map_or_else(crate::notice::Status::at_rest, |live| live.status());
    if sender.send(status_event(&status)).await.is_err() {
        return;
    }
    loop {
        let notice = match live.recv().await {
            Ok(notice) => notice,
            Err(broadcast::error::RecvError::Lagged(_)) => Notice::Resync,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let sent = match notice {
            Notice::Stored(event) if event.id > last => {
                last = event.id;
                sender.send(stored_event(&event)).await.map_err(drop)
            }
            Notice::Stored(_) => Ok(()),
            Notice::Status(status) => sender.send(status_event(&status)).await.map_err(drop),
            Notice::Resync => replay(&hub, &id, &mut last, &sender).await,
            Notice::Poke(stored) if stored > last => replay(&hub, &id, &mut last, &sender).await,
            Notice::Poke(_) => Ok(()),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Sends every stored event after `last`, moving `last` on.
async fn replay(
    hub: &Hub,
    id: &str,
    last: &mut EventId,
    sender: &mpsc::Sender<Event>,
) -> Result<(), ()> {
    loop {
        let page = match hub.store().events_after(id, Some(*last), PAGE).await {
            Ok(page) => page,
            Err(error) => {
                tracing::warn!(session = id, %error, "replaying events");
                return Err(());
            }
        };
        let full = page.len() == PAGE;
        for event in page {
            *last = event.id;
            sender.send(stored_event(&event)).await.map_err(drop)?;
        }
        if !full {
            return Ok(());
        }
    }
}

/// A stored event as SSE: `id` the store id, `event` its kind, `data` the event with the
/// model's text rendered as safe HTML (`html`) for thoughts and final answers.
pub fn stored_event(event: &StoredEvent) -> Event {
    let mut data = json!({
        "id": event.id,
        "run_id": event.run_id,
        "at": event.at,
        "data": event.data,
    });
    if let Some(markdown) = markdown_of(event) {
        data["html"] = Value::String(to_safe_html(markdown));
    }
    Event::default()
        .id(event.id.to_string())
        .event(event.kind.as_str())
        .data(data.to_string())
}

/// The text of an event that the page shows as rendered markdown.
fn markdown_of(event: &StoredEvent) -> Option<&str> {
    match event.kind {
        EventKind::Agent if event.data["type"] == "thought" => event.data["content"].as_str(),
        EventKind::RunFinished => event.data["answer"].as_str(),
        _ => None,
    }
}

/// A status notice as SSE (no id: it is not stored).
fn status_event(status: &crate::notice::Status) -> Event {
    Event::default()
        .event("status")
        .data(serde_json::to_string(status).unwrap_or_default())
}
