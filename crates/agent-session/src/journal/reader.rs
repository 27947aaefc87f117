//! Reading a journal back: every line in order, with each `model_request` line turned back into
//! the exact request body that was sent.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};
use thiserror::Error;

use super::format::{
    KIND_REQUEST, LEGACY_BODY, MESSAGES, NEW_MESSAGES, NEW_TOOLS, PARAMS, SEQ, TOOLS,
};
use super::texts::TextReader;

/// Why a journal cannot be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The file cannot be opened or read.
    #[error("cannot read the journal: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a JSON object.
    #[error("journal line {line}: not a JSON object: {reason}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        reason: String,
    },
    /// A `model_request` line refers to something the journal does not hold, or lacks a field.
    #[error("journal line {line}: {what}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

/// One line of a journal, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum JournalLine {
    /// A model request with its body rebuilt.
    Request {
        /// The request's number (`None` in journals written before requests were numbered).
        seq: Option<u64>,
        /// When it was sent, in milliseconds since the Unix epoch, as written.
        time_ms: Option<String>,
        /// The body, equal as JSON to the one sent.
        body: Value,
    },
    /// Any other line (`event`, `task`, `result`, `model_response`, ...), as it was sent to
    /// the journal (long texts put back).
    Entry(Value),
}

/// Reads a journal line by line. It holds every distinct message and tool schema seen so far
/// (what the journal itself holds), never a rebuilt body beyond the one it returns.
///
/// ```
/// use agent_session::journal::{JournalLine, JournalReader};
///
/// let journal = concat!(
///     r#"{"kind":"task","task":"hi"}"#, "\n",
///     r#"{"kind":"model_request","seq":0,"params":{"model":"m"},"#,
///     r#""new_messages":[{"role":"user","content":"hi"}],"messages":[[0,1]]}"#, "\n",
///     r#"{"kind":"model_request","seq":1,"params":{"model":"m"},"#,
///     r#""new_messages":[{"role":"assistant","content":"yes?"}],"messages":[[0,2],[0,1]]}"#, "\n",
/// );
/// let lines: Vec<JournalLine> = JournalReader::new(journal.as_bytes())
///     .collect::<Result<_, _>>()
///     .unwrap();
/// let JournalLine::Request { body, .. } = &lines[2] else { panic!() };
/// assert_eq!(
///     body,
///     &serde_json::json!({"model": "m", "messages": [
///         {"role": "user", "content": "hi"},
///         {"role": "assistant", "content": "yes?"},
///         {"role": "user", "content": "hi"},
///     ]})
/// );
/// ```
#[derive(Debug)]
pub struct JournalReader<R> {
    lines: std::io::Lines<R>,
    line: usize,
    bodies: Bodies,
    texts: TextReader,
}

impl JournalReader<BufReader<File>> {
    /// Opens the journal at `path`.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        Ok(Self::new(BufReader::new(File::open(path)?)))
    }
}

impl<R: BufRead> JournalReader<R> {
    /// Reads the journal text from `reader`.
    pub fn new(reader: R) -> Self {
        Self {
            lines: reader.lines(),
            line: 0,
            bodies: Bodies::default(),
            texts: TextReader::default(),
        }
    }

    /// Decodes one line's JSON object.
    fn decode(&mut self, mut entry: Map<String, Value>) -> Result<JournalLine, ReadError> {
        if entry.get("kind").and_then(Value::as_str) != Some(KIND_REQUEST) {
            return Ok(JournalLine::Entry(Value::Object(entry)));
        }
        let seq = entry.get(SEQ).and_then(Value::as_u64);
        let time_ms = entry
            .get("time_ms")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = match entry.remove(LEGACY_BODY) {
            Some(body) => body,
            None => self
                .bodies
                .body(entry)
                .map_err(|what| self.malformed(what))?,
        };
        Ok(JournalLine::Request { seq, time_ms, body })
    }

    fn malformed(&self, what: String) -> ReadError {
        ReadError::Malformed {
            line: self.line,
            what,
        }
    }
}

impl<R: BufRead> Iterator for JournalReader<R> {
    type Item = Result<JournalLine, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let text = match self.lines.next()? {
                Ok(text) => text,
                Err(error) => return Some(Err(error.into())),
            };
            self.line += 1;
            if text.trim().is_empty() {
                continue;
            }
            let mut entry = match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(entry)) => Value::Object(entry),
                Ok(_) => {
                    return Some(Err(ReadError::Json {
                        line: self.line,
                        reason: "not an object".into(),
                    }));
                }
                Err(error) => {
                    return Some(Err(ReadError::Json {
                        line: self.line,
                        reason: error.to_string(),
                    }));
                }
            };
            if let Err(what) = self.texts.decode(&mut entry) {
                return Some(Err(self.malformed(what)));
            }
            let Value::Object(entry) = entry else {
                return Some(Err(self.malformed("not an object".into())));
            };
            return Some(self.decode(entry));
        }
    }
}

/// Every distinct message and tool schema of a run of linear `model_request` lines read so far:
/// what rebuilds each line's body.
#[derive(Debug, Default)]
pub(crate) struct Bodies {
    messages: Vec<Value>,
    tools: HashMap<String, Value>,
}

impl Bodies {
    /// Rebuilds the body of a linear `model_request` line.
    pub(crate) fn body(&mut self, mut entry: Map<String, Value>) -> Result<Value, String> {
        let mut body = match entry.remove(PARAMS) {
            Some(Value::Object(params)) => params,
            _ => return Err(format!("a {KIND_REQUEST} line without {PARAMS}")),
        };
        if let Some(Value::Object(new)) = entry.remove(NEW_TOOLS) {
            self.tools.extend(new);
        }
        if let Some(new) = entry.remove(NEW_MESSAGES) {
            let Value::Array(new) = new else {
                return Err(format!("{NEW_MESSAGES} is not an array"));
            };
            self.messages.extend(new);
        }
        if let Some(ranges) = entry.get(MESSAGES) {
            let messages = self.messages(ranges)?;
            body.insert("messages".into(), Value::Array(messages));
        }
        if let Some(tools) = entry.get(TOOLS) {
            let tools = self.tools(tools)?;
            body.insert("tools".into(), Value::Array(tools));
        }
        Ok(Value::Object(body))
    }

    /// The messages named by `[start, end)` ranges of message numbers.
    fn messages(&self, ranges: &Value) -> Result<Vec<Value>, String> {
        let mut messages = Vec::new();
        for range in ranges.as_array().map(Vec::as_slice).unwrap_or_default() {
            let bound = |i: usize| {
                range
                    .get(i)
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok())
            };
            let slice = match (bound(0), bound(1)) {
                (Some(start), Some(end)) => self.messages.get(start..end),
                _ => None,
            };
            let Some(slice) = slice else {
                return Err(format!(
                    "message range {range} is not within the {} messages written so far",
                    self.messages.len()
                ));
            };
            messages.extend_from_slice(slice);
        }
        Ok(messages)
    }

    /// The tools named by `[name, hash]` pairs.
    fn tools(&self, refs: &Value) -> Result<Vec<Value>, String> {
        let mut tools = Vec::new();
        for reference in refs.as_array().map(Vec::as_slice).unwrap_or_default() {
            let tool = reference
                .get(1)
                .and_then(Value::as_str)
                .and_then(|hash| self.tools.get(hash));
            let Some(tool) = tool else {
                return Err(format!("tool {reference} has no schema before it"));
            };
            tools.push(tool.clone());
        }
        Ok(tools)
    }
}

/// Every line of the journal at `path`, requests rebuilt.
///
/// # Errors
///
/// See [`ReadError`].
pub fn read(path: &Path) -> Result<Vec<JournalLine>, ReadError> {
    JournalReader::open(path)?.collect()
}

/// The body of every model request in the journal at `path`, in the order they were written.
///
/// # Errors
///
/// See [`ReadError`].
pub fn request_bodies(path: &Path) -> Result<Vec<Value>, ReadError> {
    JournalReader::open(path)?
        .filter_map(|line| match line {
            Ok(JournalLine::Request { body, .. }) => Some(Ok(body)),
            Ok(JournalLine::Entry(_)) => None,
            Err(error) => Some(Err(error)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lines(text: &str) -> Vec<Result<JournalLine, ReadError>> {
        JournalReader::new(text.as_bytes()).collect()
    }

    #[test]
    fn an_older_line_with_the_whole_body_reads_as_that_body() {
        let read = lines(r#"{"kind":"model_request","time_ms":"5","body":{"model":"m"}}"#);
        assert_eq!(
            read[0].as_ref().unwrap(),
            &JournalLine::Request {
                seq: None,
                time_ms: Some("5".into()),
                body: json!({"model": "m"}),
            }
        );
    }

    #[test]
    fn references_to_what_the_journal_never_wrote_are_errors_with_their_line() {
        let text = concat!(
            "\n",
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"model_request","params":{},"new_messages":[{"a":1}],"messages":[[0,2]]}"#,
            "\n",
            r#"{"kind":"model_request","params":{},"tools":[["bash","0123"]]}"#,
            "\n[1]\n{not json\n",
        );
        let read = lines(text);
        assert_eq!(read.len(), 5);
        assert_eq!(
            read[0].as_ref().unwrap(),
            &JournalLine::Entry(json!({"kind": "task", "task": "t"}))
        );
        assert!(
            matches!(read[1], Err(ReadError::Malformed { line: 3, .. })),
            "{read:?}"
        );
        assert!(
            matches!(read[2], Err(ReadError::Malformed { line: 4, .. })),
            "{read:?}"
        );
        assert!(
            matches!(read[3], Err(ReadError::Json { line: 5, .. })),
            "{read:?}"
        );
        assert!(
            matches!(read[4], Err(ReadError::Json { line: 6, .. })),
            "{read:?}"
        );
    }
}
