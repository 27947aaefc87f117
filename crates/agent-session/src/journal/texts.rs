//! Long texts written once: a string of [`MIN_TEXT`] bytes or more that the journal already
//! holds (an observation sent back to the model, also in the `tool_call_finished` and
//! `step_finished` events, or the same file viewed again) is written as a reference to it.
//!
//! Every line is walked in order (object fields in the order the line holds them, arrays in
//! order); each long string not seen before takes the next text number (the first is 0). A
//! string seen before becomes `"\u0000<number>"`. A string that itself starts with `\u0000` is
//! written with one more `\u0000` in front and never takes a number.

use std::collections::HashMap;

use serde_json::Value;

/// Strings shorter than this are always written as they are.
pub const MIN_TEXT: usize = 256;

/// The first character of a reference (or of an escaped string).
const MARK: char = '\u{0}';

/// The writer's side: the long texts written so far.
#[derive(Debug, Default)]
pub(crate) struct TextWriter {
    seen: HashMap<String, u64>,
}

impl TextWriter {
    /// Replaces, in `value`, every long string written before by a reference to it.
    pub(crate) fn encode(&mut self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if text.starts_with(MARK) {
                    text.insert(0, MARK);
                } else if text.len() >= MIN_TEXT {
                    let next = u64::try_from(self.seen.len()).unwrap_or(u64::MAX);
                    match self.seen.get(text.as_str()) {
                        Some(number) => *text = format!("{MARK}{number}"),
                        None => {
                            self.seen.insert(text.clone(), next);
                        }
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.encode(item)),
            Value::Object(fields) => fields.values_mut().for_each(|field| self.encode(field)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The reader's side: the long texts read so far.
#[derive(Debug, Default)]
pub(crate) struct TextReader {
    texts: Vec<String>,
}

impl TextReader {
    /// Puts back, in `value`, every text a reference names.
    ///
    /// # Errors
    ///
    /// A reference to a text not read yet, or a string that starts with `\u0000` but is
    /// neither a reference nor escaped.
    pub(crate) fn decode(&mut self, value: &mut Value) -> Result<(), String> {
        match value {
            Value::String(text) => {
                if let Some(rest) = text.strip_prefix(MARK) {
                    *text = if rest.starts_with(MARK) {
                        rest.to_owned()
                    } else {
                        let known = rest
                            .parse::<usize>()
                            .ok()
                            .and_then(|number| self.texts.get(number));
                        match known {
                            Some(known) => known.clone(),
                            None => {
                                return Err(format!(
                                    "text reference {rest:?} names none of the {} texts read so far",
                                    self.texts.len()
                                ));
                            }
                        }
                    };
                } else if text.len() >= MIN_TEXT {
                    self.texts.push(text.clone());
                }
                Ok(())
            }
            Value::Array(items) => items.iter_mut().try_for_each(|item| self.decode(item)),
            Value::Object(fields) => fields.values_mut().try_for_each(|field| self.decode(field)),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_text_seen_before_is_a_reference_and_comes_back() {
        let long = "x".repeat(MIN_TEXT);
        let other = "y".repeat(MIN_TEXT + 1);
        let lines = [
            json!({"event": {"observation": long, "short": "hi"}}),
            json!({"result": long, "list": [other, long]}),
            json!({"escaped": "\u{0}0", "again": other}),
        ];
        let mut writer = TextWriter::default();
        let mut written: Vec<Value> = lines.to_vec();
        written.iter_mut().for_each(|line| writer.encode(line));
        assert_eq!(written[0], lines[0]);
        assert_eq!(
            written[1],
            json!({"result": "\u{0}0", "list": [other, "\u{0}0"]})
        );
        assert_eq!(
            written[2],
            json!({"escaped": "\u{0}\u{0}0", "again": "\u{0}1"})
        );

        let mut reader = TextReader::default();
        for (line, original) in written.iter_mut().zip(&lines) {
            reader.decode(line).unwrap();
            assert_eq!(line, original);
        }
    }

    #[test]
    fn a_reference_to_an_unknown_text_is_an_error() {
        let mut reader = TextReader::default();
        assert!(reader.decode(&mut json!(["\u{0}3"])).is_err());
        assert!(reader.decode(&mut json!("\u{0}x")).is_err());
    }
}
