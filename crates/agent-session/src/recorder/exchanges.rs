//! The model exchanges of a recorded session: the requests and replies a
//! [`JournaledModel`](crate::JournaledModel) sends to the recorder's queue, as the rows the
//! store keeps.

use agent_llm::ChatResponse;
use agent_store::{ExchangePart, JsonText, NewExchange, RunId};
use serde_json::Value;
use tracing::warn;

use crate::journal::format::{KIND_ERROR, KIND_RESPONSE, SEQ};
use crate::journal::{Encoder, Entry};

/// The model exchanges of the session as the writer stores them: each request as the change
/// from what this writer stored before (a journal's `model_request` line without its time, kind
/// and number), numbered within `stream`.
pub(super) struct Exchanges {
    pub(super) encoder: Encoder,
    /// The number of this writer's first request: its requests form one stream (a reader
    /// rebuilds them from the stream's rows alone).
    pub(super) stream: i64,
}

impl Exchanges {
    /// The exchange row of `entry` (`None` for lines that are not part of an exchange).
    pub(super) fn exchange(&mut self, entry: Entry, run: Option<RunId>) -> Option<NewExchange> {
        let (head, part, data) = match entry {
            Entry::Request { head, body } => (
                head,
                ExchangePart::Request,
                Value::Object(self.encoder.encode(body)).into(),
            ),
            Entry::Delta { head, delta } => {
                let line = self.encoder.encode_delta(delta);
                let data = JsonText::of(&line)
                    .inspect_err(|error| warn!(%error, "a model request cannot be recorded"))
                    .ok()?;
                (head, ExchangePart::Request, data)
            }
            Entry::Reply { head, response } => {
                /// What the store keeps of a reply line.
                #[derive(serde::Serialize)]
                struct Reply<'a> {
                    response: &'a ChatResponse,
                }
                let data = JsonText::of(&Reply {
                    response: &response,
                })
                .inspect_err(|error| warn!(%error, "a model reply cannot be recorded"))
                .ok()?;
                (head, ExchangePart::Reply, data)
            }
            Entry::Line(Value::Object(mut line)) => {
                let part = match line.get("kind").and_then(Value::as_str) {
                    Some(KIND_RESPONSE) => ExchangePart::Reply,
                    Some(KIND_ERROR) => ExchangePart::Error,
                    _ => return None,
                };
                let mut head = serde_json::Map::new();
                for key in ["time_ms", "kind", SEQ] {
                    if let Some(value) = line.remove(key) {
                        head.insert(key.to_owned(), value);
                    }
                }
                (head, part, Value::Object(line).into())
            }
            Entry::Line(_) | Entry::Close => return None,
        };
        Some(NewExchange {
            run_id: run,
            stream: self.stream,
            seq: head.get(SEQ).and_then(Value::as_i64)?,
            part,
            at: time_of(&head),
            data,
        })
    }
}

/// The time a journal line's `head` gives (now, when it gives none).
fn time_of(head: &serde_json::Map<String, Value>) -> i64 {
    head.get("time_ms")
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(agent_store::now_ms)
}
