//! A sandboxed process's pipes pumped into bounded buffers (its process group itself is an
//! `agent_process::ProcessGroup`).

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// Bytes read from a pipe, at most `limit` of them kept.
#[derive(Debug, Default)]
pub(crate) struct Buffer {
    pub(crate) data: Vec<u8>,
    pub(crate) truncated: bool,
    pub(crate) eof: bool,
}

/// A buffer shared between a pump task and its reader, with a change signal.
#[derive(Debug)]
pub(crate) struct Shared {
    buffer: Mutex<Buffer>,
    changed: watch::Sender<u64>,
    /// Over the limit, drop the oldest bytes (a session: the end, with its completion marker,
    /// must survive) rather than the newest (a command's output: its start is kept).
    keep_tail: bool,
}

impl Shared {
    /// A buffer that keeps the first bytes when over its limit.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::plain())
    }

    /// A buffer that keeps the newest bytes when over its limit (for sessions).
    pub(crate) fn tail() -> Arc<Self> {
        Arc::new(Self {
            keep_tail: true,
            ..Self::plain()
        })
    }

    fn plain() -> Self {
        Self {
            buffer: Mutex::new(Buffer::default()),
            changed: watch::Sender::new(0),
            keep_tail: false,
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Buffer) -> T) -> T {
        f(&mut self.buffer.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn update(&self, f: impl FnOnce(&mut Buffer)) {
        self.with(f);
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Appends `bytes`, keeping at most `limit` bytes buffered (the rest is dropped and the
    /// buffer marked truncated).
    pub(crate) fn append(&self, bytes: &[u8], limit: usize) {
        let keep_tail = self.keep_tail;
        self.update(|buffer| {
            if keep_tail {
                buffer.data.extend_from_slice(bytes);
                let excess = buffer.data.len().saturating_sub(limit);
                if excess > 0 {
                    buffer.data.drain(..excess);
                    buffer.truncated = true;
                }
                return;
            }
            let room = limit.saturating_sub(buffer.data.len());
            if bytes.len() > room {
                buffer.truncated = true;
            }
            buffer
                .data
                .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        });
    }

    /// Marks the end of the stream.
    pub(crate) fn finish(&self) {
        self.update(|buffer| buffer.eof = true);
    }

    /// Takes the buffered text (lossy UTF-8) and whether some was dropped, emptying the buffer.
    pub(crate) fn take(&self) -> (String, bool) {
        self.with(|b| {
            let text = String::from_utf8_lossy(&b.data).into_owned();
            b.data.clear();
            (text, std::mem::take(&mut b.truncated))
        })
    }

    /// Waits until `needle` is in the buffer (true), or the stream ended or `deadline` passed
    /// (false).
    pub(crate) async fn wait_for(&self, needle: &str, deadline: tokio::time::Instant) -> bool {
        let mut changes = self.subscribe();
        loop {
            let (seen, eof) =
                self.with(|b| (String::from_utf8_lossy(&b.data).contains(needle), b.eof));
            if seen {
                return true;
            }
            if eof
                || tokio::time::timeout_at(deadline, changes.changed())
                    .await
                    .is_err()
            {
                return false;
            }
        }
    }
}

/// Copies `pipe` into `shared` until end of file, keeping at most `limit` bytes buffered (the
/// rest is read and dropped, so the writer never blocks).
pub(crate) async fn pump(mut pipe: impl AsyncRead + Unpin, shared: Arc<Shared>, limit: usize) {
    let mut chunk = vec![0_u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => shared.append(chunk.get(..n).unwrap_or_default(), limit),
        }
    }
    shared.finish();
}
