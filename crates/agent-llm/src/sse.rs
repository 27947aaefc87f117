//! A streamed reply's server-sent events, decoded in one pass over its bytes.
//!
//! Lines end at LF, CR or CR LF; a line that starts with `:` is a comment; a `data` field adds
//! its value (after one optional space) and a line feed to the event's data; an empty line
//! dispatches the event (without its last line feed) when it has data; `event`, `id`, `retry`
//! and unknown fields are ignored, as is a line without a colon: what the HTML standard's event
//! stream interpretation does with them, for the part a model's reply uses (its data). An
//! event left unfinished when the stream ends is dropped, as the standard says.
//!
//! Written here rather than taken from `eventsource-stream` (which copies what is left of its
//! buffer after every line: a reply's chunks arrive many to a read, so that was quadratic, and
//! it was the largest cost of a step, ~0.3 M instructions) or `sse-stream` (which fails a
//! stream on an unknown field or a line without a colon, which the standard ignores).

use std::collections::VecDeque;

use bytes::Bytes;
use futures::{Stream, StreamExt};

/// The UTF-8 byte order mark a stream may start with.
const BOM: &str = "\u{feff}";

/// Decodes event-stream bytes into the events' data.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The end of a line not yet complete.
    partial: Vec<u8>,
    /// The data of the event being read.
    data: String,
    /// Whether the event being read has a `data` field (its data may be empty).
    has_data: bool,
    /// The last chunk ended in a CR: an LF opening the next one ends no line.
    after_cr: bool,
    /// A line was read already (a BOM is only taken off the first).
    started: bool,
    /// Events dispatched and not yet taken.
    ready: VecDeque<String>,
}

impl Decoder {
    /// Takes the next bytes of the stream.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.partial.is_empty() {
                self.line(&bytes[..end]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&bytes[..end]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.partial.extend_from_slice(bytes);
    }

    /// The data of the next complete event.
    pub(crate) fn next_event(&mut self) -> Option<String> {
        self.ready.pop_front()
    }

    /// One line, without its end.
    fn line(&mut self, line: &[u8]) {
        // Lines end at ASCII bytes only: a line is whole UTF-8 (or as much as was sent).
        // `from_utf8` checks a word at a time; the lossy form only when a line is not UTF-8.
        let text = match std::str::from_utf8(line) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(line),
        };
        let mut text: &str = &text;
        if !self.started {
            self.started = true;
            text = text.strip_prefix(BOM).unwrap_or(text);
        }
        if text.is_empty() {
            if self.has_data {
                self.has_data = false;
                if self.data.ends_with('\n') {
                    self.data.pop();
                }
                self.ready.push_back(std::mem::take(&mut self.data));
            }
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text, ""),
        };
        if field == "data" {
            self.has_data = true;
            // Room for the newline too: otherwise adding it reallocates (and copies) the
            // event's data, once per chunk.
            self.data.reserve(value.len() + 1);
            self.data.push_str(value);
            self.data.push('\n');
        }
    }
}

/// The data of each event of `body`, in order; a transport error is passed on, and ends it.
pub(crate) fn data_events<E>(
    body: impl Stream<Item = Result<Bytes, E>>,
) -> impl Stream<Item = Result<String, E>> {
    let state = (Box::pin(body), Decoder::default(), false);
    futures::stream::unfold(state, |(mut body, mut decoder, failed)| async move {
        loop {
            if let Some(data) = decoder.next_event() {
                return Some((Ok(data), (body, decoder, failed)));
            }
            if failed {
                return None;
            }
            match body.next().await? {
                Ok(bytes) => decoder.push(&bytes),
                Err(error) => return Some((Err(error), (body, decoder, true))),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `chunks`, fed one after the other.
    fn decode(chunks: &[&[u8]]) -> Vec<String> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            while let Some(data) = decoder.next_event() {
                out.push(data);
            }
        }
        out
    }

    #[test]
    fn events_are_split_at_blank_lines_whatever_the_line_ends() {
        let stream: &[u8] = b"\xEF\xBB\xBFdata: {\"a\":1}\n\ndata:two\r\ndata:  lines\r\n\r\n: a comment\nevent: message_stop\r\ndata: [DONE]\r\r";
        let expected = ["{\"a\":1}", "two\n lines", "[DONE]"];
        assert_eq!(decode(&[stream]), expected);
        // Cut anywhere, even between a CR and its LF, the stream says the same.
        for at in 0..stream.len() {
            assert_eq!(
                decode(&[&stream[..at], &stream[at..]]),
                expected,
                "cut at {at}"
            );
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(decode(&bytes), expected);
    }

    #[test]
    fn what_the_standard_ignores_is_ignored() {
        let stream =
            b"id: 7\nretry: 10\nx-vendor: 1\nlonely\ndata\n\nevent: ping\n\ndata: last\n\ndata: unfinished";
        // `data` alone is an event with empty data; an event without data is not dispatched;
        // the unfinished one is dropped.
        assert_eq!(decode(&[stream]), ["", "last"]);
        // A broken UTF-8 sequence is replaced, not an error.
        assert_eq!(decode(&[b"data: caf\xC3\n\n"]), ["caf\u{fffd}"]);
    }

    #[tokio::test]
    async fn a_byte_stream_becomes_its_events_and_an_error_ends_it() {
        let chunks: Vec<Result<Bytes, &str>> = vec![
            Ok(Bytes::from_static(b"data: a\n\nda")),
            Ok(Bytes::from_static(b"ta: b\n\n")),
            Err("reset"),
            Ok(Bytes::from_static(b"data: c\n\n")),
        ];
        let events: Vec<Result<String, &str>> =
            data_events(futures::stream::iter(chunks)).collect().await;
        assert_eq!(
            events,
            [Ok("a".to_owned()), Ok("b".to_owned()), Err("reset")]
        );
    }
}
