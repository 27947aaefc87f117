//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), client side, as an `rmcp` transport.
//!
//! The client GETs the SSE URL; the server's first event, `endpoint`, gives the URL (relative to
//! the SSE URL) to POST JSON-RPC messages to; the server's messages arrive as `message` events on
//! the SSE stream. `rmcp` dropped this transport, and OpenManus's `mcp.json` `type: "sse"` uses it.

use std::borrow::Cow;
use std::future::Future;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use thiserror::Error;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How many server messages may wait for the client before the SSE reader pauses.
const CHANNEL_CAPACITY: usize = 64;

/// Why the SSE transport failed.
#[derive(Debug, Error)]
pub(crate) enum SseError {
    /// The HTTP request failed (connection refused, reset, ...).
    #[error("HTTP request to {url} failed: {source}")]
    Http {
        /// The URL.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The SSE stream ended, or failed, before the `endpoint` event.
    #[error("the SSE stream of {url} ended before its `endpoint` event")]
    NoEndpoint {
        /// The SSE URL.
        url: String,
    },
    /// A URL could not be parsed.
    #[error("bad URL `{url}`: {source}")]
    BadUrl {
        /// The text.
        url: String,
        /// The parser's error.
        #[source]
        source: url::ParseError,
    },
    /// A message could not be serialised.
    #[error("cannot serialise a JSON-RPC message: {0}")]
    Json(#[from] serde_json::Error),
}

/// The client side of one legacy SSE session: an [`rmcp::transport::Transport`].
pub(crate) struct SseClientTransport {
    client: reqwest::Client,
    headers: HeaderMap,
    post_url: Url,
    messages: mpsc::Receiver<ServerJsonRpcMessage>,
    /// Stops the SSE reader task when the transport goes away.
    _reader: DropGuard,
}

impl SseClientTransport {
    /// Opens the SSE stream at `url` and waits for its `endpoint` event. The caller bounds the
    /// wait with its connect timeout.
    pub(crate) async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<Self, SseError> {
        let sse_url = Url::parse(url).map_err(|source| SseError::BadUrl {
            url: url.to_owned(),
            source,
        })?;
        let response = client
            .get(sse_url.clone())
            .headers(headers.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .send()
            .await
            .map_err(|source| SseError::Http {
                url: url.to_owned(),
                source,
            })?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(SseError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                body: body.chars().take(200).collect(),
            });
        }
        let mut events = response.bytes_stream().eventsource();
        let post_url = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "endpoint" => {
                    let target = event.data.trim();
                    break sse_url.join(target).map_err(|source| SseError::BadUrl {
                        url: target.to_owned(),
                        source,
                    })?;
                }
                Some(Ok(event)) => {
                    tracing::debug!(url, event = %event.event, "SSE event before `endpoint` ignored");
                }
                Some(Err(error)) => {
                    tracing::debug!(url, %error, "SSE stream failed before `endpoint`");
                    return Err(SseError::NoEndpoint {
                        url: url.to_owned(),
                    });
                }
                None => {
                    return Err(SseError::NoEndpoint {
                        url: url.to_owned(),
                    });
                }
            }
        };
        tracing::debug!(url, post_url = %post_url, "SSE endpoint received");
        let (sender, messages) = mpsc::channel(CHANNEL_CAPACITY);
        let stop = CancellationToken::new();
        let reader_stop = stop.clone();
        let source = url.to_owned();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    biased;
                    () = reader_stop.cancelled() => break,
                    event = events.next() => event,
                };
                match event {
                    Some(Ok(event)) if event.event.is_empty() || event.event == "message" => {
                        match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                            Ok(message) => {
                                if sender.send(message).await.is_err() {
                                    break;
                                }
                            }
                            Err(error) => tracing::warn!(
                                url = %source, %error,
                                "malformed JSON-RPC message on the SSE stream ignored"
                            ),
                        }
                    }
                    Some(Ok(event)) => {
                        tracing::debug!(url = %source, event = %event.event, "SSE event ignored");
                    }
                    Some(Err(error)) => {
                        tracing::info!(url = %source, %error, "SSE stream failed");
                        break;
                    }
                    None => {
                        tracing::info!(url = %source, "SSE stream closed by the server");
                        break;
                    }
                }
            }
            // Dropping `sender` ends the transport: `receive` answers `None`.
        });
        Ok(Self {
            client,
            headers,
            post_url,
            messages,
            _reader: stop.drop_guard(),
        })
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("sse")
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let headers = self.headers.clone();
        let url = self.post_url.clone();
        async move {
            let body = serde_json::to_vec(&item)?;
            let mut headers = headers;
            // Replacing a configured header of the same name, as the streamable transport does.
            for (name, value) in crate::trace_headers::of(&item) {
                headers.insert(name, value);
            }
            let response = client
                .post(url.clone())
                .headers(headers)
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body)
                .send()
                .await
                .map_err(|source| SseError::Http {
                    url: url.to_string(),
                    source,
                })?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                let body = response.text().await.unwrap_or_default();
                Err(SseError::Status {
                    url: url.to_string(),
                    status: status.as_u16(),
                    body: body.chars().take(200).collect(),
                })
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.messages.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.messages.close();
        Ok(())
    }
}
