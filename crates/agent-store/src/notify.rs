//! Notices of new events across processes (PostgreSQL): every transaction that stores events
//! of a session also sends `pg_notify('openmanus_events', '<last id> <session>')`, which the
//! server delivers to every listening process when the transaction commits; a process hears
//! them through `Store::notifications`. A server that keeps a session's live stream follows
//! another process's run of it this way.

use std::time::Duration;

use sqlx::postgres::{PgConnection, PgListener, PgPool, Postgres};
use tokio::sync::broadcast;

use crate::db::Tx;
use crate::error::StoreError;
use crate::types::EventId;

/// The channel the notices of stored events are sent on.
pub const EVENTS_CHANNEL: &str = "openmanus_events";

/// The channel requests to the process running a session are sent on (`cancel <session>`).
pub const CONTROL_CHANNEL: &str = "openmanus_control";

/// The longest payload PostgreSQL takes is 8000 bytes: a longer one (a session id of kilobytes)
/// is not sent, and listeners of that session learn of its events at their next reconnect.
const MAX_PAYLOAD: usize = 7999;

/// Notices a listening process keeps for a slow reader before it says some were missed.
const BACKLOG: usize = 1024;

/// What `Store::notifications` hears.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreNotice {
    /// Events of `session` up to `last` were stored (by any process, this one included).
    Events {
        /// The session.
        session: String,
        /// The id of the last event stored.
        last: EventId,
    },
    /// Notices may have been missed (the connection to the database was lost and made again,
    /// or the reader fell behind): every follower reads the store again.
    Missed,
    /// A process sharing the store was asked to cancel the run of `session` (by
    /// `Store::ask_cancel`): the process running it cancels it.
    Cancel {
        /// The session.
        session: String,
    },
}

/// Sends `payload` on `channel`: at the commit of the transaction `executor` is in, or at once.
async fn send<'c, E>(executor: E, channel: &str, payload: &str) -> Result<(), StoreError>
where
    E: sqlx::Executor<'c, Database = Postgres>,
{
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload)
        .execute(executor)
        .await?;
    Ok(())
}

/// Sends, in the transaction `conn` is in, the notice that `session`'s events up to `last` were
/// stored: delivered when it commits.
pub(crate) async fn events_stored(
    conn: &mut PgConnection,
    session: &str,
    last: EventId,
) -> Result<(), StoreError> {
    let payload = format!("{last} {session}");
    if payload.len() <= MAX_PAYLOAD {
        send(conn, EVENTS_CHANNEL, &payload).await?;
    }
    Ok(())
}

/// [`events_stored`] in `tx` (nothing on SQLite, where one process holds the file's sessions).
pub(crate) async fn notify(tx: &mut Tx, session: &str, last: EventId) -> Result<(), StoreError> {
    if let Tx::Postgres(tx) = tx {
        events_stored(tx, session, last).await?;
    }
    Ok(())
}

/// Asks whichever process runs `session` to cancel its run; false when its id is too long for
/// a notice.
pub(crate) async fn ask_cancel(pool: &PgPool, session: &str) -> Result<bool, StoreError> {
    let Some(payload) = cancel_payload(session) else {
        return Ok(false);
    };
    send(pool, CONTROL_CHANNEL, &payload).await?;
    Ok(true)
}

/// The payload asking the process running `session` to cancel its run (`None` when too long).
fn cancel_payload(session: &str) -> Option<String> {
    let payload = format!("cancel {session}");
    (payload.len() <= MAX_PAYLOAD).then_some(payload)
}

/// The request a control payload carries.
fn parse_control(payload: &str) -> Option<StoreNotice> {
    let session = payload.strip_prefix("cancel ")?;
    Some(StoreNotice::Cancel {
        session: session.to_owned(),
    })
}

/// The notice a payload carries.
fn parse(payload: &str) -> Option<StoreNotice> {
    let (last, session) = payload.split_once(' ')?;
    Some(StoreNotice::Events {
        session: session.to_owned(),
        last: last.parse().ok()?,
    })
}

/// The one listening connection of a store, opened by its first subscriber.
#[derive(Debug, Default)]
pub(crate) struct Listener(tokio::sync::Mutex<Option<broadcast::Sender<StoreNotice>>>);

impl Listener {
    /// A receiver of the notices `pool`'s database sends, listening when this returns.
    pub(crate) async fn subscribe(
        &self,
        pool: &PgPool,
    ) -> Result<broadcast::Receiver<StoreNotice>, StoreError> {
        let mut sender = self.0.lock().await;
        if let Some(sender) = sender.as_ref() {
            return Ok(sender.subscribe());
        }
        let mut listener = PgListener::connect_with(pool).await?;
        listener
            .listen_all([EVENTS_CHANNEL, CONTROL_CHANNEL])
            .await?;
        let (notices, receiver) = broadcast::channel(BACKLOG);
        tokio::spawn(listen(listener, notices.clone()));
        *sender = Some(notices);
        Ok(receiver)
    }
}

/// Hands every notice heard to `notices` until the store's pool is closed.
async fn listen(mut listener: PgListener, notices: broadcast::Sender<StoreNotice>) {
    let mut failed = false;
    loop {
        match listener.try_recv().await {
            Ok(Some(notification)) => {
                if failed {
                    failed = false;
                    let _ = notices.send(StoreNotice::Missed);
                }
                let notice = if notification.channel() == CONTROL_CHANNEL {
                    parse_control(notification.payload())
                } else {
                    parse(notification.payload())
                };
                match notice {
                    Some(notice) => {
                        let _ = notices.send(notice);
                    }
                    None => tracing::debug!(
                        channel = notification.channel(),
                        payload = notification.payload(),
                        "a notice that is none of ours"
                    ),
                }
            }
            // The connection was lost and made again: what was sent meanwhile is lost.
            Ok(None) => {
                let _ = notices.send(StoreNotice::Missed);
            }
            Err(sqlx::Error::PoolClosed) => return,
            Err(error) => {
                if !failed {
                    tracing::warn!(%error, "listening for the session store's notices");
                }
                failed = true;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_the_last_id_then_the_session() {
        assert_eq!(
            parse("42 a session id"),
            Some(StoreNotice::Events {
                session: "a session id".to_owned(),
                last: 42
            })
        );
        assert_eq!(parse("x s"), None);
        assert_eq!(
            parse_control(&cancel_payload("a b").unwrap()),
            Some(StoreNotice::Cancel {
                session: "a b".to_owned()
            })
        );
        assert_eq!(parse_control("stop a"), None);
        assert_eq!(parse("42"), None);
    }
}
