//! The limit on concurrent runs: a run past the limit waits its turn, first come first served,
//! and its place in the line can be asked for (the page shows it).

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// Admits at most `limit` runs at once; the rest wait in arrival order.
#[derive(Debug, Clone)]
pub struct RunQueue {
    slots: Arc<Semaphore>,
    line: Arc<Mutex<Line>>,
    changed: watch::Sender<u64>,
    limit: usize,
}

#[derive(Debug, Default)]
struct Line {
    next_ticket: u64,
    /// (ticket, session id) of every run waiting, in arrival order.
    waiting: Vec<(u64, String)>,
}

/// A run's right to go on; dropping it lets the next waiting run start.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    queue: RunQueue,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.queue.bump();
    }
}

impl RunQueue {
    /// A queue that lets `limit` runs (at least one) go at once.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            slots: Arc::new(Semaphore::new(limit)),
            line: Arc::default(),
            changed: watch::channel(0).0,
            limit,
        }
    }

    /// The limit.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Waits until a run of `session` may start. Cancel-safe: a caller that stops waiting
    /// leaves the line.
    pub async fn admit(&self, session: &str) -> Option<Slot> {
        let ticket = {
            let mut line = self.lock();
            let ticket = line.next_ticket;
            line.next_ticket += 1;
            line.waiting.push((ticket, session.to_owned()));
            ticket
        };
        self.bump();
        let leave = LeaveLine {
            queue: self,
            ticket,
        };
        let permit = Arc::clone(&self.slots).acquire_owned().await.ok();
        drop(leave);
        permit.map(|permit| Slot {
            _permit: permit,
            queue: self.clone(),
        })
    }

    /// The 1-based place of `session`'s run in the line, `None` when it is not waiting.
    #[must_use]
    pub fn position(&self, session: &str) -> Option<usize> {
        self.lock()
            .waiting
            .iter()
            .position(|(_, waiting)| waiting == session)
            .map(|index| index + 1)
    }

    /// How many runs wait.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// How many runs hold a slot.
    #[must_use]
    pub fn running(&self) -> usize {
        self.limit - self.slots.available_permits().min(self.limit)
    }

    /// A receiver that changes whenever the line or the running set changes.
    #[must_use]
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes a ticket out of the line when its wait ends, however it ends.
struct LeaveLine<'a> {
    queue: &'a RunQueue,
    ticket: u64,
}

impl Drop for LeaveLine<'_> {
    fn drop(&mut self) {
        self.queue
            .lock()
            .waiting
            .retain(|(ticket, _)| *ticket != self.ticket);
        self.queue.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_past_the_limit_wait_in_order() {
        let queue = RunQueue::new(1);
        let first = queue.admit("a").await.unwrap();
        assert_eq!(queue.running(), 1);
        let mut changes = queue.changes();
        let q = queue.clone();
        let second = tokio::spawn(async move { q.admit("b").await.map(|_| "b") });
        changes
            .wait_for(|_| queue.position("b") == Some(1))
            .await
            .unwrap();
        let q = queue.clone();
        let third = tokio::spawn(async move { q.admit("c").await.map(|_| "c") });
        changes
            .wait_for(|_| queue.position("c") == Some(2))
            .await
            .unwrap();
        assert_eq!(queue.waiting(), 2);
        drop(first);
        assert_eq!(second.await.unwrap(), Some("b"));
        assert_eq!(third.await.unwrap(), Some("c"));
        assert_eq!(queue.waiting(), 0);
        assert_eq!(queue.running(), 0);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_line() {
        let queue = RunQueue::new(1);
        let _held = queue.admit("a").await.unwrap();
        let mut changes = queue.changes();
        let q = queue.clone();
        let waiter = tokio::spawn(async move { q.admit("b").await.is_some() });
        changes
            .wait_for(|_| queue.position("b") == Some(1))
            .await
            .unwrap();
        waiter.abort();
        assert!(waiter.await.is_err());
        assert_eq!(queue.position("b"), None);
    }
}
