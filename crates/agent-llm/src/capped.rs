//! Replies read with a limit (issue 35): a streamed body stops at a byte budget (the caller
//! marks the reply as cut), a whole body past it is not read at all. Without it one 20 MB
//! streamed line was held, parsed and copied whole (~1 GB of memory).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures::{Stream, StreamExt};

/// The note a reply cut at `limit` bytes ends with.
pub(crate) fn cut_note(limit: usize) -> String {
    format!(
        "[openmanus: the reply was cut after {limit} bytes of the stream: it was longer than \
         max_tokens allows]"
    )
}

/// `reply` marked as cut at `limit` bytes: the note at the end of its text, `finish_reason`
/// `length`.
pub(crate) fn marked_cut(mut reply: crate::ChatResponse, limit: usize) -> crate::ChatResponse {
    let note = cut_note(limit);
    reply.content = Some(match reply.content.take() {
        Some(text) => format!("{text}\n{note}"),
        None => note,
    });
    reply.finish_reason = Some("length".to_owned());
    reply
}

/// Whether a [`capped`] stream stopped at its budget.
#[derive(Debug, Clone)]
pub(crate) struct Cut(Arc<AtomicBool>);

impl Cut {
    /// The budget was reached: the body went on past it.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// `body`, ending before the chunk that would take it past `limit` bytes.
pub(crate) fn capped<E>(
    body: impl Stream<Item = Result<Bytes, E>>,
    limit: usize,
) -> (impl Stream<Item = Result<Bytes, E>>, Cut) {
    let cut = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&cut);
    let mut left = limit;
    let body = body.take_while(move |chunk| {
        let keep = match chunk {
            Ok(bytes) if bytes.len() > left => {
                seen.store(true, Ordering::Relaxed);
                false
            }
            Ok(bytes) => {
                left -= bytes.len();
                true
            }
            Err(_) => true,
        };
        std::future::ready(keep)
    });
    (body, Cut(cut))
}

/// The whole body of `response`, or `None` when it is longer than `limit` bytes (then not
/// read further).
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Option<Bytes>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(Bytes::from(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_stops_before_the_chunk_past_its_budget() {
        let chunks = ["abc", "def", "ghij", "k"].map(|c| Ok::<_, ()>(Bytes::from(c)));
        let (body, cut) = capped(futures::stream::iter(chunks), 7);
        let kept: Vec<Bytes> = body.map(Result::unwrap).collect().await;
        assert_eq!(kept, ["abc", "def"]);
        assert!(cut.get());
        let (body, cut) = capped(futures::stream::iter([Ok::<_, ()>(Bytes::from("ab"))]), 2);
        assert_eq!(body.count().await, 1);
        assert!(!cut.get());
    }
}
