//! One output stream of the shell (stdout or stderr): the bytes a call has not reported yet, with
//! the end-of-command marker line removed and a bounded size.
//!
//! After each command the shell prints `\n<<openmanus-rs:{nonce}:{status}>>\n` on stdout and
//! `\n<<openmanus-rs:{nonce}:>>\n` on stderr. The leading newline puts the marker on a line of its
//! own even when the command's output did not end with one; [`StreamCapture`] removes that newline
//! together with the marker line, so what is kept is exactly what the command printed.
//!
//! To do that without waiting for whole lines, the newline that ends a line is *held* and only
//! committed when more output follows; a marker line drops it. A partial line that could still
//! become the marker is held too (it is at most a few dozen bytes); everything else is committed
//! as soon as it arrives, so a prompt without a newline is visible while the command runs.

/// What every marker line starts with.
const MARKER_PREFIX: &str = "<<openmanus-rs:";
/// What every marker line ends with.
const MARKER_SUFFIX: &str = ">>";
/// The longest status a marker carries (`$?` is at most 255).
const MAX_STATUS_LEN: usize = 3;

/// The two marker lines the shell prints after the command of `nonce`: the one for stdout carries
/// the exit status (`printf` format, taking `$?`), the one for stderr does not.
pub(super) fn marker_printfs(nonce: &str) -> String {
    format!(
        "builtin printf '\\n{MARKER_PREFIX}{nonce}:%s{MARKER_SUFFIX}\\n' \"$?\"\n\
         builtin printf '\\n{MARKER_PREFIX}{nonce}:{MARKER_SUFFIX}\\n' >&2\n"
    )
}

/// A marker line of the running command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Marker {
    /// The exit status it carries (the stdout marker does, the stderr one does not).
    pub(super) status: Option<i32>,
}

/// Text taken from a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Captured {
    /// The most recent bytes, decoded as UTF-8 (invalid sequences replaced).
    pub(super) text: String,
    /// How many earlier bytes were dropped to respect the size limit.
    pub(super) dropped: u64,
}

/// The not-yet-reported bytes of one stream.
#[derive(Debug)]
pub(super) struct StreamCapture {
    kept: Vec<u8>,
    dropped: u64,
    limit: usize,
    /// The newline that ended the last committed line, not committed yet.
    held_newline: bool,
    /// The start of the current line, held because it could be the marker.
    line: Vec<u8>,
    /// Part of the current line is already committed, so it is not the marker.
    mid_line: bool,
}

impl StreamCapture {
    /// A capture that keeps at most `limit` bytes (the most recent ones) between two takes.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            dropped: 0,
            limit,
            held_newline: false,
            line: Vec::new(),
            mid_line: false,
        }
    }

    /// Takes in bytes read from the pipe. `nonce` is the command being waited for, if any. Returns
    /// its marker when the marker line was among the bytes.
    pub(super) fn feed(&mut self, mut data: &[u8], nonce: Option<&str>) -> Option<Marker> {
        let mut found = None;
        while !data.is_empty() {
            let (segment, terminated) = match data.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    let segment = &data[..at];
                    data = &data[at + 1..];
                    (segment, true)
                }
                None => (std::mem::take(&mut data), false),
            };
            if self.mid_line {
                self.commit(segment);
            } else {
                self.line.extend_from_slice(segment);
                if terminated {
                    if let Some(marker) = nonce.and_then(|n| parse_marker(&self.line, n)) {
                        // The marker line and the newline the marker printed before it.
                        self.line.clear();
                        self.held_newline = false;
                        found = Some(marker);
                        continue;
                    }
                } else if nonce.is_some_and(|n| could_be_marker(&self.line, n)) {
                    continue;
                }
                let line = std::mem::take(&mut self.line);
                self.commit(&line);
                self.line = line;
                self.line.clear();
                self.mid_line = !terminated;
            }
            if terminated {
                self.mid_line = false;
                self.held_newline = true;
            }
        }
        found
    }

    /// The pipe is closed: a held partial line is ordinary output after all.
    pub(super) fn finish(&mut self) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.commit(&line);
            self.mid_line = true;
        }
    }

    /// Hands over what was captured since the last take. A held line end is dropped: the text
    /// taken reads as ending there, and what follows continues without a leading blank line.
    pub(super) fn take(&mut self) -> Captured {
        self.trim_to(self.limit);
        if self.dropped > 0 {
            // Do not start in the middle of a UTF-8 sequence.
            let partial = self
                .kept
                .iter()
                .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
                .count();
            self.kept.drain(..partial);
            self.dropped += partial as u64;
        }
        let kept = std::mem::take(&mut self.kept);
        let captured = Captured {
            text: String::from_utf8_lossy(&kept).into_owned(),
            dropped: std::mem::take(&mut self.dropped),
        };
        self.held_newline = false;
        captured
    }

    fn commit(&mut self, bytes: &[u8]) {
        if std::mem::take(&mut self.held_newline) {
            self.kept.push(b'\n');
        }
        self.kept.extend_from_slice(bytes);
        // Trimming on every chunk would move up to `limit` bytes each time; let the buffer grow
        // to twice the limit first.
        if self.kept.len() > self.limit.saturating_mul(2).max(64 * 1024) {
            self.trim_to(self.limit);
        }
    }

    fn trim_to(&mut self, limit: usize) {
        if self.kept.len() > limit {
            let excess = self.kept.len() - limit;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }
}

/// `<<openmanus-rs:{nonce}:` as bytes.
fn marker_head(nonce: &str) -> Vec<u8> {
    format!("{MARKER_PREFIX}{nonce}:").into_bytes()
}

/// Whether `line` (no newline yet) may still turn out to be the marker of `nonce`.
fn could_be_marker(line: &[u8], nonce: &str) -> bool {
    let head = marker_head(nonce);
    if line.len() <= head.len() {
        return head.starts_with(line);
    }
    line.starts_with(&head) && line.len() <= head.len() + MAX_STATUS_LEN + MARKER_SUFFIX.len()
}

/// The marker of `nonce`, if `line` is exactly that.
fn parse_marker(line: &[u8], nonce: &str) -> Option<Marker> {
    let rest = line.strip_prefix(marker_head(nonce).as_slice())?;
    let status = rest.strip_suffix(MARKER_SUFFIX.as_bytes())?;
    if status.is_empty() {
        return Some(Marker { status: None });
    }
    if status.len() > MAX_STATUS_LEN || !status.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let status = std::str::from_utf8(status).ok()?.parse().ok()?;
    Some(Marker {
        status: Some(status),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: &str = "abc123";

    /// Feeds `chunks`; the status of the marker found among them (`Some(None)`: a marker
    /// without a status).
    fn feed_all(capture: &mut StreamCapture, chunks: &[&str]) -> Option<Option<i32>> {
        let mut found = None;
        for chunk in chunks {
            if let Some(marker) = capture.feed(chunk.as_bytes(), Some(N)) {
                found = Some(marker.status);
            }
        }
        found
    }

    #[test]
    fn the_marker_and_the_newline_before_it_are_removed() {
        for (output, expected) in [
            ("hi\n", "hi\n"),
            ("hi", "hi"),
            ("", ""),
            ("a\n\n", "a\n\n"),
            ("\n", "\n"),
        ] {
            let mut capture = StreamCapture::new(1024);
            let stream = format!("{output}\n<<openmanus-rs:{N}:7>>\nlater");
            assert_eq!(feed_all(&mut capture, &[&stream]), Some(Some(7)));
            let taken = capture.take();
            assert_eq!(taken.text, format!("{expected}later"), "output {output:?}");
        }
    }

    #[test]
    fn a_marker_split_across_reads_is_still_found() {
        let stream = format!("one\ntwo\n\n<<openmanus-rs:{N}:0>>\n");
        for split in 0..stream.len() {
            let mut capture = StreamCapture::new(1024);
            let (a, b) = stream.split_at(split);
            assert_eq!(
                feed_all(&mut capture, &[a, b]),
                Some(Some(0)),
                "split {split}"
            );
            assert_eq!(capture.take().text, "one\ntwo\n", "split {split}");
        }
    }

    #[test]
    fn the_stderr_marker_has_no_status_and_other_nonces_are_text() {
        let mut capture = StreamCapture::new(1024);
        assert_eq!(
            feed_all(&mut capture, &["x\n<<openmanus-rs:other:1>>\n"]),
            None
        );
        assert_eq!(
            feed_all(&mut capture, &[&format!("\n<<openmanus-rs:{N}:>>\n")]),
            Some(None)
        );
        assert_eq!(capture.take().text, "x\n<<openmanus-rs:other:1>>\n");
    }

    #[test]
    fn without_a_nonce_nothing_is_held_or_removed() {
        let mut capture = StreamCapture::new(1024);
        let line = format!("<<openmanus-rs:{N}:0>>\n<<openm");
        assert_eq!(capture.feed(line.as_bytes(), None), None);
        assert_eq!(
            capture.take().text,
            format!("<<openmanus-rs:{N}:0>>\n<<openm")
        );
    }

    #[test]
    fn partial_lines_are_visible_unless_they_may_be_the_marker() {
        let mut capture = StreamCapture::new(1024);
        feed_all(&mut capture, &["Password: "]);
        assert_eq!(capture.take().text, "Password: ");
        feed_all(&mut capture, &["ok\n<<openmanus"]);
        assert_eq!(
            capture.take().text,
            "ok",
            "the held newline ends the taken text"
        );
        feed_all(&mut capture, &["-rs:nope\n"]);
        assert_eq!(capture.take().text, "<<openmanus-rs:nope");
        feed_all(&mut capture, &["<<openmanus"]);
        capture.finish();
        assert_eq!(
            capture.take().text,
            "<<openmanus",
            "end of stream commits it"
        );
    }

    #[test]
    fn only_the_most_recent_bytes_are_kept() {
        let mut capture = StreamCapture::new(10);
        let big = "0123456789".repeat(20_000);
        feed_all(&mut capture, &[&big, "tail\n"]);
        let taken = capture.take();
        assert_eq!(taken.text, "456789tail");
        assert_eq!(taken.dropped, 200_004 - 10);
        let empty = capture.take();
        assert_eq!(empty, Captured::default());
    }

    #[test]
    fn a_cut_never_starts_inside_a_utf8_sequence() {
        let mut capture = StreamCapture::new(5);
        feed_all(&mut capture, &["ééééé"]);
        let taken = capture.take();
        assert_eq!(taken.text, "éé");
        assert_eq!(taken.dropped, 6);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn the_marker_is_found_and_the_output_kept_however_the_reads_fall(
                output in any::<String>().prop_filter("not the marker itself", |o| !o.contains(N)),
                status in 0i32..=255,
                tail in "[a-z ]{0,8}",
                cuts in proptest::collection::vec(any::<usize>(), 0..8),
            ) {
                let stream = format!("{output}\n<<openmanus-rs:{N}:{status}>>\n{tail}");
                let bytes = stream.as_bytes();
                let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
                points.extend([0, bytes.len()]);
                points.sort_unstable();
                points.dedup();
                let mut capture = StreamCapture::new(1 << 20);
                let mut found = None;
                for window in points.windows(2) {
                    if let Some(marker) = capture.feed(&bytes[window[0]..window[1]], Some(N)) {
                        prop_assert!(found.is_none(), "two markers");
                        found = Some(marker.status);
                    }
                }
                capture.finish();
                prop_assert_eq!(found, Some(Some(status)));
                prop_assert_eq!(capture.take().text, format!("{output}{tail}"));
            }

            #[test]
            fn no_input_makes_the_scanner_panic(
                chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
                limit in 0usize..128,
                waiting in any::<bool>(),
            ) {
                let mut capture = StreamCapture::new(limit);
                for chunk in &chunks {
                    let _ = capture.feed(chunk, waiting.then_some(N));
                    let taken = capture.take();
                    prop_assert!(taken.text.len() <= limit.saturating_mul(3).max(limit) + 3);
                }
                capture.finish();
                let _ = capture.take();
            }
        }
    }
}
