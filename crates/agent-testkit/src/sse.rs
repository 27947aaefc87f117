//! [`SseClient`]: a minimal Server-Sent Events client over reqwest, for tests that follow a
//! server's event stream (`openmanus serve`'s `/api/sessions/{id}/events`) as a browser does,
//! with a `Last-Event-ID` to resume from.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// How long [`SseClient::next`] waits for a message (a loaded 2-core machine).
pub const SSE_PATIENCE: Duration = Duration::from_secs(120);

/// Why the stream could not be followed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The request failed, or the server answered with an error status.
    #[error("the event stream: {0}")]
    Http(#[from] reqwest::Error),
    /// No message came in time.
    #[error("no event on the stream within {0:?}")]
    Timeout(Duration),
    /// The server ended the stream.
    #[error("the event stream ended")]
    Ended,
    /// A message's data is not JSON.
    #[error("an event's data is not JSON: {0}")]
    Data(#[from] serde_json::Error),
}

/// One message.
#[derive(Debug, Clone)]
pub struct SseEvent {
    /// Its `id:` (a number), if it has one.
    pub id: Option<i64>,
    /// Its `event:` name (`message` when it has none).
    pub event: String,
    /// Its `data:`, parsed as JSON.
    pub data: Value,
}

impl SseEvent {
    /// The agent event's `type` for an `agent` message, else the event name.
    #[must_use]
    pub fn name(&self) -> String {
        if self.event == "agent" {
            self.data["data"]["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        } else {
            self.event.clone()
        }
    }
}

/// A stream of messages being read.
pub struct SseClient {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl std::fmt::Debug for SseClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseClient")
            .field("buffered", &self.buffer.len())
            .finish_non_exhaustive()
    }
}

impl SseClient {
    /// Opens the stream at `url`, sending `Last-Event-ID: last_event_id` when given.
    ///
    /// # Errors
    ///
    /// The request failed or was answered with an error status.
    pub async fn connect(
        http: &reqwest::Client,
        url: &str,
        last_event_id: Option<i64>,
    ) -> Result<Self, SseError> {
        let mut request = http.get(url).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = request.send().await?.error_for_status()?;
        Ok(Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        })
    }

    /// The next message (comments and keep-alives skipped), waiting at most [`SSE_PATIENCE`].
    ///
    /// # Errors
    ///
    /// None came in time, the stream ended or broke, or its data is not JSON.
    pub async fn next(&mut self) -> Result<SseEvent, SseError> {
        tokio::time::timeout(SSE_PATIENCE, self.next_inner())
            .await
            .map_err(|_| SseError::Timeout(SSE_PATIENCE))?
    }

    async fn next_inner(&mut self) -> Result<SseEvent, SseError> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: None,
                    event: "message".into(),
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        event.id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event.event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() {
                    continue;
                }
                event.data = serde_json::from_str(&data)?;
                return Ok(event);
            }
            let chunk = self.stream.next().await.ok_or(SseError::Ended)??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Messages until one matches `stop` (included).
    ///
    /// # Errors
    ///
    /// As [`SseClient::next`].
    pub async fn until(
        &mut self,
        stop: impl Fn(&SseEvent) -> bool,
    ) -> Result<Vec<SseEvent>, SseError> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await?;
            let done = stop(&event);
            seen.push(event);
            if done {
                return Ok(seen);
            }
        }
    }
}
