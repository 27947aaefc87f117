//! Long texts stored once per session: the observation a tool returns is in the
//! `tool_call_finished` and `step_finished` events, in the agent's memory and in the next
//! request to the model; the store keeps it once, in `texts`, and the rows hold a reference.
//!
//! The codec works on JSON text, not on values: every string literal (keys included) whose
//! escaped content is [`MIN_TEXT`] bytes or more becomes `"\u0000<key>"`, where `<key>` is the
//! 22-character base64url form of the first 16 bytes of the SHA-256 of that content. A
//! literal whose content itself starts with the escape `\u0000` gets one more `\u0000` in front,
//! so it is never taken for a reference. Texts are addressed by content, so writers in
//! different processes (a resumed session) or at the same time never clash, and nothing has to
//! be loaded before writing. Only rows marked `refs = 1` are decoded: rows written before the
//! `texts` table existed read as they are.

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::db::{Pool, Row, query};
use crate::error::StoreError;
use crate::script::Script;

/// String literals shorter than this (escaped, in bytes) are always written as they are.
pub const MIN_TEXT: usize = 256;

/// The JSON escape of NUL: what a reference (or an escaped literal) starts with.
const MARK: &str = "\\u0000";

/// The length of a reference's key (16 bytes in base64url without padding).
const KEY_LEN: usize = 22;

/// The long texts a session writer has already stored: the content of each literal (escaped,
/// as written) → its key. SHA-256 runs once per distinct text.
#[derive(Debug, Default)]
pub struct TextCache {
    keys: foldhash::HashMap<Box<str>, Box<str>>,
}

impl TextCache {
    /// `json` with every long literal replaced by its reference; the texts this cache had not
    /// seen are added to `script` (an insert into `texts` that keeps a stored one).
    pub(crate) fn encode(
        &mut self,
        json: &str,
        session: &str,
        script: &mut Script,
    ) -> Result<String, StoreError> {
        // Most rows (a step's events, its short messages) are too short to hold a long
        // literal: unless one holds the escape a literal would have to be marked for, they
        // are written as they are, without looking at their literals.
        if json.len() < MIN_TEXT + 2 && !holds_mark(json) {
            return Ok(json.to_owned());
        }
        let mut out = String::with_capacity(json.len());
        // What of `json` is in `out` already.
        let mut copied = 0;
        for (open, close) in Literals::new(json) {
            let content = span(json, open + 1, close);
            if content.starts_with(MARK) {
                out.push_str(span(json, copied, open + 1));
                out.push_str(MARK);
                copied = open + 1;
            } else if content.len() >= MIN_TEXT {
                let key = match self.keys.get(content) {
                    Some(key) => key,
                    None => {
                        let hash = hash_of(content);
                        script.statement(
                            "INSERT INTO texts (session_id, hash, text) VALUES (?, ?, ?) \
                             ON CONFLICT (session_id, hash) DO NOTHING",
                        );
                        script.bind(session);
                        script.bind(hash.to_vec());
                        script.bind(content);
                        let key: Box<str> = URL_SAFE_NO_PAD.encode(hash).into();
                        self.keys.entry(content.into()).or_insert(key)
                    }
                };
                out.push_str(span(json, copied, open + 1));
                out.push_str(MARK);
                out.push_str(key);
                copied = close;
            }
        }
        out.push_str(span(json, copied, json.len()));
        Ok(out)
    }
}

/// Whether `json` holds [`MARK`] anywhere (its backslashes are few: a byte search for them
/// costs less than setting up a substring search).
fn holds_mark(json: &str) -> bool {
    let bytes = json.as_bytes();
    memchr::memchr_iter(b'\\', bytes).any(|at| {
        bytes
            .get(at..)
            .is_some_and(|rest| rest.starts_with(MARK.as_bytes()))
    })
}

/// The first 16 bytes of the SHA-256 of `content`.
fn hash_of(content: &str) -> [u8; 16] {
    let digest = Sha256::digest(content.as_bytes());
    let mut hash = [0; 16];
    hash.copy_from_slice(&digest[..16]);
    hash
}

/// `json[from..to]` (the bounds are at ASCII quotes or the ends, so always char boundaries).
fn span(json: &str, from: usize, to: usize) -> &str {
    json.get(from..to).unwrap_or_default()
}

/// The string literals of a JSON text, in order: the byte positions of each one's opening and
/// closing quote (a backslash inside a literal escapes the byte after it; an unterminated
/// literal at the end is not one).
struct Literals<'a> {
    bytes: &'a [u8],
    /// Where the search goes on.
    at: usize,
}

impl<'a> Literals<'a> {
    fn new(json: &'a str) -> Self {
        Self {
            bytes: json.as_bytes(),
            at: 0,
        }
    }

    /// The next quote or backslash from `self.at` on.
    fn next_special(&self) -> Option<usize> {
        let rest = self.bytes.get(self.at..)?;
        // Most literals, and most gaps between them, are a few bytes long: a plain loop over
        // the first bytes costs less than setting up the vector search for each.
        let head = rest.len().min(SHORT_SCAN);
        let special = |b: &u8| *b == b'"' || *b == b'\\';
        match rest.get(..head)?.iter().position(special) {
            Some(found) => Some(self.at + found),
            None => {
                memchr::memchr2(b'"', b'\\', rest.get(head..)?).map(|found| self.at + head + found)
            }
        }
    }
}

/// Bytes [`Literals`] looks at one by one before it searches with `memchr`.
const SHORT_SCAN: usize = 32;

impl Iterator for Literals<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        // Outside literals a backslash is not JSON; it is passed over as before.
        let open = loop {
            let found = self.next_special()?;
            self.at = found + 1;
            if self.bytes.get(found) == Some(&b'"') {
                break found;
            }
        };
        loop {
            let found = self.next_special()?;
            if self.bytes.get(found) == Some(&b'"') {
                self.at = found + 1;
                return Some((open, found));
            }
            self.at = found + 2;
        }
    }
}

/// The reference keys in `json` (a row written with `refs = 1`), added to `keys`.
pub(crate) fn keys_in(json: &str, keys: &mut HashSet<String>) {
    for (open, close) in Literals::new(json) {
        if let Some(key) = reference(span(json, open + 1, close)) {
            keys.insert(key.to_owned());
        }
    }
}

/// The key of a literal's content when it is a reference.
fn reference(content: &str) -> Option<&str> {
    let key = content.strip_prefix(MARK)?;
    (key.len() == KEY_LEN && !key.starts_with(MARK)).then_some(key)
}

/// The texts of a page of rows, by key.
#[derive(Debug, Default)]
pub(crate) struct Texts(HashMap<String, String>);

impl Texts {
    /// Loads the texts of `session` that `keys` name.
    pub(crate) async fn load(
        pool: &Pool,
        session: &str,
        keys: HashSet<String>,
    ) -> Result<Self, StoreError> {
        let mut texts = HashMap::with_capacity(keys.len());
        let keys: Vec<String> = keys.into_iter().collect();
        // Well below SQLite's limit of bound variables.
        for chunk in keys.chunks(500) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql =
                format!("SELECT hash, text FROM texts WHERE session_id = ? AND hash IN ({marks})");
            let mut select = query(sql).bind(session);
            for key in chunk {
                let hash = URL_SAFE_NO_PAD
                    .decode(key)
                    .map_err(|e| StoreError::corrupt("text reference", e))?;
                select = select.bind(hash);
            }
            for row in pool.fetch_all(select).await? {
                let hash: Vec<u8> = row.get("hash")?;
                texts.insert(URL_SAFE_NO_PAD.encode(hash), row.get("text")?);
            }
        }
        Ok(Self(texts))
    }

    /// `json` (a row written with `refs = 1`) with every reference replaced by its text and
    /// every escaped literal put back.
    pub(crate) fn decode(&self, json: &str) -> Result<String, StoreError> {
        let mut out = String::with_capacity(json.len());
        // What of `json` is in `out` already.
        let mut copied = 0;
        for (open, close) in Literals::new(json) {
            let content = span(json, open + 1, close);
            let Some(escaped) = content.strip_prefix(MARK) else {
                continue;
            };
            out.push_str(span(json, copied, open + 1));
            if escaped.starts_with(MARK) {
                out.push_str(escaped);
            } else {
                match (reference(content), self.0.get(escaped)) {
                    (Some(_), Some(text)) => out.push_str(text),
                    _ => {
                        return Err(StoreError::corrupt(
                            "text",
                            format!("the reference {escaped:?} names no stored text"),
                        ));
                    }
                }
            }
            copied = close;
        }
        out.push_str(span(json, copied, json.len()));
        Ok(out)
    }
}

/// The text of `column`, its references replaced when the row has `refs` set.
pub(crate) fn decoded(row: &Row, column: &str, texts: &Texts) -> Result<String, StoreError> {
    let text: String = row.get(column)?;
    let refs: i64 = row.get("refs")?;
    if refs == 0 {
        Ok(text)
    } else {
        texts.decode(&text)
    }
}

/// The texts the rows' `column` refers to (for rows with `refs` set).
pub(crate) async fn texts_of(
    pool: &Pool,
    session: &str,
    rows: &[Row],
    column: &str,
) -> Result<Texts, StoreError> {
    let mut keys = HashSet::new();
    for row in rows {
        let refs: i64 = row.get("refs")?;
        if refs != 0 {
            let text: &str = row.str(column)?;
            keys_in(text, &mut keys);
        }
    }
    if keys.is_empty() {
        return Ok(Texts::default());
    }
    Texts::load(pool, session, keys).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// Encodes with `cache`, returning the text and the texts the script would insert.
    fn encode(cache: &mut TextCache, value: &serde_json::Value) -> (String, usize) {
        let mut script = Script::default();
        let text = cache.encode(&value.to_string(), "s", &mut script).unwrap();
        (text, script.statements())
    }

    #[test]
    fn a_long_text_becomes_a_reference_once_and_comes_back() {
        let long = "x\"y\n".repeat(MIN_TEXT / 4);
        let short = "s".repeat(MIN_TEXT - 1);
        let value = json!({"a": long, "b": [short, long], "c": 1});
        let mut cache = TextCache::default();
        let (text, inserts) = encode(&mut cache, &value);
        assert_eq!(inserts, 1, "{text}");
        assert!(!text.contains("x\\\"y"), "{text}");
        assert!(text.contains(&short));
        // Seen before: no second insert.
        let (again, inserts) = encode(&mut cache, &json!([long]));
        assert_eq!(inserts, 0);

        let mut keys = HashSet::new();
        keys_in(&text, &mut keys);
        keys_in(&again, &mut keys);
        assert_eq!(keys.len(), 1);
        let key = keys.iter().next().unwrap().clone();
        let escaped = serde_json::to_string(&long).unwrap();
        let texts = Texts(HashMap::from([(
            key,
            escaped[1..escaped.len() - 1].to_owned(),
        )]));
        let back: serde_json::Value = serde_json::from_str(&texts.decode(&text).unwrap()).unwrap();
        assert_eq!(back, value);
        assert_eq!(texts.decode(&again).unwrap(), json!([long]).to_string());
    }

    #[test]
    fn the_shortest_row_with_a_long_literal_is_encoded_and_shorter_rows_are_kept() {
        let mut cache = TextCache::default();
        // `"` + MIN_TEXT bytes + `"`: the shortest row a long literal fits in.
        let shortest = json!("z".repeat(MIN_TEXT));
        assert_eq!(shortest.to_string().len(), MIN_TEXT + 2);
        let (text, inserts) = encode(&mut cache, &shortest);
        assert_eq!(inserts, 1);
        assert!(text.starts_with("\"\\u0000"), "{text}");
        let short = json!({"k": "y".repeat(MIN_TEXT - 10)});
        let (text, inserts) = encode(&mut cache, &short);
        assert_eq!((text, inserts), (short.to_string(), 0));
    }

    #[test]
    fn a_text_that_starts_like_a_reference_is_escaped_whatever_its_length() {
        let tricky = json!({"t": "\u{0}ABCDEFGHIJKLMNOPQRSTUV", "u": "\u{0}\u{0}"});
        let (text, inserts) = encode(&mut TextCache::default(), &tricky);
        assert_eq!(inserts, 0);
        let mut keys = HashSet::new();
        keys_in(&text, &mut keys);
        assert!(keys.is_empty(), "{text}");
        let back = Texts::default().decode(&text).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&back).unwrap(),
            tricky
        );
    }

    /// The escaped length of the longest string in `value` (keys included).
    fn longest_string(value: &serde_json::Value) -> usize {
        use serde_json::Value;
        let escaped = |s: &str| serde_json::to_string(s).unwrap().len() - 2;
        match value {
            Value::String(s) => escaped(s),
            Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| escaped(k).max(longest_string(v)))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn literals_with_escaped_quotes_and_backslashes_are_found_whole() {
        let long = MIN_TEXT + 3;
        let tricky = [
            "\\".repeat(long),
            format!("{}\\", "a".repeat(long)),
            format!("\\\"{}\"\\", "b".repeat(long)),
            "\"".repeat(long),
            format!("{}\u{0}", "é".repeat(long)),
            "\\\"".repeat(3),
            "\u{0}\\".to_owned(),
        ];
        let value = json!({
            "list": tricky,
            "nested": {"\\\"": [tricky[0], {"k": tricky[2]}], "n": 1.5, "t": true},
            "after": "end\\",
        });
        let mut cache = TextCache::default();
        let (text, inserts) = encode(&mut cache, &value);
        // Five distinct long texts: each stored once, none left in the row.
        assert_eq!(inserts, 5, "{text}");
        let row: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(longest_string(&row) < MIN_TEXT, "{text}");
        let mut keys = HashSet::new();
        keys_in(&text, &mut keys);
        assert_eq!(keys.len(), 5);
        let texts = Texts(
            cache
                .keys
                .iter()
                .map(|(content, key)| (key.to_string(), content.to_string()))
                .collect(),
        );
        let back: serde_json::Value = serde_json::from_str(&texts.decode(&text).unwrap()).unwrap();
        assert_eq!(back, value);
    }

    /// The literals of `json` found byte by byte: what [`Literals`] must give.
    fn literals_one_by_one(json: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut open = None;
        let mut escaped = false;
        for (at, byte) in json.bytes().enumerate() {
            match (open, byte) {
                (None, b'"') => open = Some(at),
                (Some(_), _) if escaped => escaped = false,
                (Some(_), b'\\') => escaped = true,
                (Some(start), b'"') => {
                    out.push((start, at));
                    open = None;
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn literals_are_found_as_a_byte_by_byte_reading_finds_them() {
        // Texts of quotes, backslashes and other bytes, short and past the word-by-word scan.
        let pieces = [
            "\"",
            "\\",
            "a",
            "é",
            "\n",
            " ",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let length = (seed >> 33) % 120;
            let mut json = String::new();
            for _ in 0..length {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                json.push_str(pieces[usize::try_from(seed >> 61).unwrap() % pieces.len()]);
            }
            assert_eq!(
                Literals::new(&json).collect::<Vec<_>>(),
                literals_one_by_one(&json),
                "{json:?}"
            );
        }
    }

    #[test]
    fn a_reference_to_a_missing_text_is_corrupt() {
        let (text, _) = encode(&mut TextCache::default(), &json!(["z".repeat(MIN_TEXT)]));
        let error = Texts::default().decode(&text).unwrap_err();
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    }

    #[test]
    fn the_same_text_has_the_same_key_in_every_writer() {
        let value = json!({"o": "q".repeat(MIN_TEXT * 2)});
        let (one, _) = encode(&mut TextCache::default(), &value);
        let (two, _) = encode(&mut TextCache::default(), &value);
        assert_eq!(one, two);
    }
}
