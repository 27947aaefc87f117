//! Content capture: whether message content, tool arguments and results go into the spans
//! (`[telemetry] capture_content`, or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`),
//! and the secrets replaced in what does.
//!
//! Off unless the exporter turned it on ([`enable`]). What is captured is cut at
//! [`MAX_CAPTURED_BYTES`]: a 20 MB tool result must not become a 20 MB span.

use std::sync::OnceLock;

/// The most bytes of one captured value; the rest is replaced by a marker.
pub const MAX_CAPTURED_BYTES: usize = 32 * 1024;

/// What replaces a secret in captured content.
pub const REDACTED: &str = "[redacted]";

/// The shortest secret replaced: shorter values (a port, a flag) would cut unrelated text.
const MIN_SECRET_LEN: usize = 8;

static CAPTURE: OnceLock<Scrubber> = OnceLock::new();

/// Replaces known secret values in text.
#[derive(Debug, Default, Clone)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    /// A scrubber of `secrets` (values shorter than 8 bytes are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            // Captured content is often JSON: a secret with a quote or a backslash appears
            // there escaped.
            .flat_map(|s| {
                let escaped = json_escaped(&s);
                std::iter::once(s).chain(escaped)
            })
            .collect();
        // Longest first: a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every secret replaced by [`REDACTED`] and cut at [`MAX_CAPTURED_BYTES`].
    #[must_use]
    pub fn scrub(&self, text: &str) -> String {
        // Replaced before the cut, so no part of a secret survives at the edge.
        let mut scrubbed = std::borrow::Cow::Borrowed(text);
        for secret in &self.secrets {
            if scrubbed.contains(secret.as_str()) {
                scrubbed = scrubbed.replace(secret.as_str(), REDACTED).into();
            }
        }
        let kept = cut(&scrubbed);
        let mut out = kept.to_owned();
        if kept.len() < scrubbed.len() {
            out.push_str(&format!("… [{} bytes in all]", scrubbed.len()));
        }
        out
    }
}

/// `secret` as it appears inside a JSON string, when that differs from the secret itself.
fn json_escaped(secret: &str) -> Option<String> {
    let mut escaped = String::with_capacity(secret.len() + 2);
    for c in secret.chars() {
        match c {
            '"' => escaped.push_str("\\\""),
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\t' => escaped.push_str("\\t"),
            '\r' => escaped.push_str("\\r"),
            c => escaped.push(c),
        }
    }
    (escaped != secret).then_some(escaped)
}

/// At most [`MAX_CAPTURED_BYTES`] of `text`, cut on a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_CAPTURED_BYTES {
        return text;
    }
    let mut end = MAX_CAPTURED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Turns content capture on for the process, with `scrubber`; later calls change nothing.
/// Returns whether this call turned it on.
pub fn enable(scrubber: Scrubber) -> bool {
    CAPTURE.set(scrubber).is_ok()
}

/// Whether content is captured.
#[must_use]
pub fn enabled() -> bool {
    CAPTURE.get().is_some()
}

/// `text` as it may be recorded (scrubbed and cut), or `None` when content is not captured.
#[must_use]
pub fn captured(text: &str) -> Option<String> {
    CAPTURE.get().map(|scrubber| scrubber.scrub(text))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_longest_first_and_short_values_ignored() {
        let scrubber = Scrubber::new([
            "sk-secret-1234".to_owned(),
            "sk-secret-1234-long".to_owned(),
            "1234".to_owned(),
        ]);
        assert_eq!(
            scrubber.scrub("key sk-secret-1234-long and sk-secret-1234, port 1234"),
            "key [redacted] and [redacted], port 1234"
        );
    }

    #[test]
    fn a_secret_is_found_escaped_in_json_too() {
        let secret = r#"pa"ss\word-123"#;
        let scrubber = Scrubber::new([secret.to_owned()]);
        let json = r#"{"key":"pa\"ss\\word-123"}"#;
        assert_eq!(scrubber.scrub(json), r#"{"key":"[redacted]"}"#);
        assert_eq!(scrubber.scrub(secret), "[redacted]");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_says_its_size() {
        let text = "é".repeat(MAX_CAPTURED_BYTES);
        let out = Scrubber::default().scrub(&text);
        assert!(out.len() < MAX_CAPTURED_BYTES + 40, "{}", out.len());
        assert!(
            out.ends_with(&format!("… [{} bytes in all]", text.len())),
            "{out:.40}"
        );
    }
}
