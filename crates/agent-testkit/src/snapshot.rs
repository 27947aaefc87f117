//! Snapshots of wire formats: the exact bytes a type writes, kept in a committed file and
//! compared byte for byte, so that a refactor that moves or merges types cannot change what is
//! on a wire (HTTP bodies, SSE frames, `--json` lines, NATS messages, journals, stored events)
//! without a test failing.
//!
//! A snapshot file is text: one case per line, `<case name>\t<exact bytes>` (compact JSON holds
//! no raw tab, so the tab is a safe separator). [`Snapshot::check`] compares what a test built
//! with the file and, on a difference, names every case that differs, is missing or is new.
//! `UPDATE_SNAPSHOTS=1` writes the file instead (for a new snapshot, or a change of format made
//! on purpose: the diff of the file is then the change, for review).
//!
//! Times and ids that differ from run to run are replaced before comparing, textually
//! ([`scrub`]): going through `serde_json::Value` would re-sort keys and hide a change of order.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The cases of one snapshot file, in the order a test adds them.
#[derive(Debug)]
pub struct Snapshot {
    path: PathBuf,
    cases: Vec<(String, String)>,
}

impl Snapshot {
    /// The snapshot kept at `path` (usually
    /// `concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/<name>.snap")`).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            cases: Vec::new(),
        }
    }

    /// Adds a case: its name and the exact text the wire carries.
    ///
    /// # Panics
    ///
    /// The name is used twice, or the name or text holds a tab or a line break (a snapshot line
    /// is one case).
    pub fn case(&mut self, name: impl Into<String>, text: impl Into<String>) -> &mut Self {
        let name = name.into();
        let text = text.into();
        assert!(
            !name.contains(['\t', '\n']) && !text.contains(['\t', '\n']),
            "snapshot case {name:?}: a name or text with a tab or a line break cannot be one line"
        );
        assert!(
            self.cases.iter().all(|(known, _)| *known != name),
            "snapshot case {name:?} added twice"
        );
        self.cases.push((name, text));
        self
    }

    /// The file's text for the cases added.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, text) in &self.cases {
            let _ = writeln!(out, "{name}\t{text}");
        }
        out
    }

    /// Compares the cases with the file (or writes the file when `UPDATE_SNAPSHOTS=1`).
    ///
    /// # Panics
    ///
    /// The file is missing or unreadable, or a case differs, is missing or is new: the message
    /// lists each, with both texts.
    #[allow(clippy::panic)] // a test's assertion: a panic is how it reports
    pub fn check(&self) {
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            }
            std::fs::write(&self.path, self.render())
                .unwrap_or_else(|e| panic!("{}: {e}", self.path.display()));
            return;
        }
        let expected = std::fs::read_to_string(&self.path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (UPDATE_SNAPSHOTS=1 writes it; commit it with the test)",
                self.path.display()
            )
        });
        if let Err(message) = self.compare(&expected) {
            panic!("{message}");
        }
    }

    /// `Err` with the differences when `expected` (a snapshot file's text) is not what the
    /// cases render to.
    fn compare(&self, expected: &str) -> Result<(), String> {
        if expected == self.render() {
            return Ok(());
        }
        let differences = differences(&parse(expected), &self.cases);
        Err(format!(
            "{} differs from what the code writes now ({} case(s)); a wire format changed. If \
             that is meant, UPDATE_SNAPSHOTS=1 rewrites the file and its diff shows the change.\n{}",
            self.path.display(),
            differences.len(),
            differences.join("\n")
        ))
    }
}

fn parse(file: &str) -> Vec<(String, String)> {
    file.lines()
        .map(|line| match line.split_once('\t') {
            Some((name, text)) => (name.to_owned(), text.to_owned()),
            None => (line.to_owned(), String::new()),
        })
        .collect()
}

fn differences(expected: &[(String, String)], actual: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, text) in expected {
        match actual.iter().find(|(n, _)| n == name) {
            None => out.push(format!("  missing now: {name}\n    was: {text}")),
            Some((_, now)) if now != text => {
                out.push(format!(
                    "  changed: {name}\n    was: {text}\n    now: {now}"
                ));
            }
            Some(_) => {}
        }
    }
    for (name, text) in actual {
        if !expected.iter().any(|(n, _)| n == name) {
            out.push(format!("  new: {name}\n    now: {text}"));
        }
    }
    if out.is_empty() {
        out.push("  the same cases in another order".to_owned());
    }
    out
}

/// `text` with the value of every `"key":` named in `keys` replaced by `"<key>"`, wherever it
/// appears (a number, a string or `null`; not an object or an array). Textual, so the order of
/// the keys is kept as written.
#[must_use]
pub fn scrub(text: &str, keys: &[&str]) -> String {
    let mut out = text.to_owned();
    for key in keys {
        let needle = format!("\"{key}\":");
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(&needle) {
            let (before, after) = rest.split_at(at + needle.len());
            result.push_str(before);
            let end = scalar_end(after);
            if end > 0 {
                result.push_str(&format!("\"<{key}>\""));
            }
            rest = &after[end..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// The length of the JSON scalar at the start of `text` (a string with its escapes, or a
/// number, `true`, `false`, `null`); 0 before an object or an array.
fn scalar_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'"') => {
            let mut i = 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return i + 1,
                    _ => i += 1,
                }
            }
            bytes.len()
        }
        Some(b'{' | b'[') | None => 0,
        Some(_) => bytes
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']'))
            .unwrap_or(bytes.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_replaces_scalars_and_keeps_the_order() {
        let text = r#"{"b":1,"at":1700000000000,"id":"x\"y","z":null,"at":{"n":1}}"#;
        assert_eq!(
            scrub(text, &["at", "id", "z"]),
            r#"{"b":1,"at":"<at>","id":"<id>","z":"<z>","at":{"n":1}}"#
        );
    }

    #[test]
    fn differences_name_changed_missing_and_new_cases() {
        let expected = vec![
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
        ];
        let actual = vec![
            ("a".to_owned(), "1".to_owned()),
            ("c".to_owned(), "3".to_owned()),
        ];
        let found = differences(&expected, &actual);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("missing now: b"));
        assert!(found[1].contains("new: c"));
        let changed = differences(&expected[..1], &[("a".to_owned(), "9".to_owned())]);
        assert!(changed[0].contains("was: 1") && changed[0].contains("now: 9"));
    }

    #[test]
    fn a_rendered_snapshot_compares_equal_and_a_changed_one_does_not() {
        let mut snapshot = Snapshot::new("unused.snap");
        snapshot.case("one", r#"{"a":1}"#).case("two", "[]");
        let file = snapshot.render();
        assert_eq!(file, "one\t{\"a\":1}\ntwo\t[]\n");
        assert_eq!(snapshot.compare(&file), Ok(()));
        let mut changed = Snapshot::new("unused.snap");
        changed.case("one", r#"{"a":2}"#).case("two", "[]");
        let message = changed.compare(&file).unwrap_err();
        assert!(message.contains("changed: one"), "{message}");
        assert!(!message.contains("two"), "{message}");
    }
}
