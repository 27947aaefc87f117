//! Pure text helpers of `str_replace_editor`: Python's `str.expandtabs`, the 16000-character clip,
//! the `cat -n` block, the ±4-line snippets and the occurrence search for `str_replace`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

/// How many characters of a file a `cat -n` block shows before it is clipped.
pub const MAX_RESPONSE_LEN: usize = 16000;

/// The notice appended, with nothing in between, to the first [`MAX_RESPONSE_LEN`] characters of
/// a clipped `cat -n` block.
pub const TRUNCATED_MESSAGE: &str = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/// How many lines of context an edit snippet shows before and after the edited lines.
pub const SNIPPET_LINES: usize = 4;

/// Python's default tab size.
const TAB_SIZE: usize = 8;

/// Text with its tabs expanded, and where each original character starts in it.
struct Expansion {
    text: String,
    /// `(offset in text, offset in the original)` for the start of every original character,
    /// then `(text.len(), original.len())`. Both columns are strictly increasing.
    boundaries: Vec<(usize, usize)>,
}

impl Expansion {
    /// The offset in the original text whose expansion starts at `offset` of the expanded text, or
    /// `None` when `offset` lies inside a tab's spaces (or inside a character).
    fn original_offset(&self, offset: usize) -> Option<usize> {
        self.boundaries
            .binary_search_by_key(&offset, |&(expanded, _)| expanded)
            .ok()
            .map(|at| self.boundaries[at].1)
    }
}

/// Python's `str.expandtabs()`: every tab becomes the spaces up to the next multiple of 8
/// columns; the column restarts after `\n` and `\r` and counts characters (code points).
fn expand(text: &str, with_boundaries: bool) -> Expansion {
    let mut expanded = String::with_capacity(text.len());
    let mut boundaries = Vec::new();
    let mut column = 0usize;
    for (offset, ch) in text.char_indices() {
        if with_boundaries {
            boundaries.push((expanded.len(), offset));
        }
        match ch {
            '\t' => {
                let spaces = TAB_SIZE - column % TAB_SIZE;
                expanded.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\n' | '\r' => {
                expanded.push(ch);
                column = 0;
            }
            _ => {
                expanded.push(ch);
                column += 1;
            }
        }
    }
    if with_boundaries {
        boundaries.push((expanded.len(), text.len()));
    }
    Expansion {
        text: expanded,
        boundaries,
    }
}

/// Python's `text.expandtabs()` (tab size 8).
pub(crate) fn expand_tabs(text: &str) -> Cow<'_, str> {
    if text.contains('\t') {
        Cow::Owned(expand(text, false).text)
    } else {
        Cow::Borrowed(text)
    }
}

/// The first [`MAX_RESPONSE_LEN`] characters followed by [`TRUNCATED_MESSAGE`] when `text` is
/// longer than that; otherwise `text` unchanged.
pub(crate) fn clip(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_RESPONSE_LEN) {
        Some((cut, _)) => Cow::Owned(format!("{}{TRUNCATED_MESSAGE}", &text[..cut])),
        None => Cow::Borrowed(text),
    }
}

/// The `cat -n` block: ``Here's the result of running `cat -n` on {descriptor}:\n``, then every
/// line of the clipped, tab-expanded `content` as its number (from `first_line`) right-aligned in
/// six columns, a tab and the text, each line ending with a newline.
pub(crate) fn cat_n(content: &str, descriptor: &str, first_line: usize) -> String {
    let clipped = clip(content);
    let expanded = expand_tabs(&clipped);
    let mut out = String::with_capacity(expanded.len() + expanded.len() / 8 + 80);
    let _ = writeln!(
        out,
        "Here's the result of running `cat -n` on {descriptor}:"
    );
    for (index, line) in expanded.split('\n').enumerate() {
        let _ = writeln!(out, "{:>6}\t{line}", first_line + index);
    }
    out
}

/// Lines `first..=last` (0-based, clamped to the text) of `text` split on `\n`, joined with `\n`
/// (Python's `"\n".join(text.split("\n")[first:last + 1])`).
pub(crate) fn line_slice(text: &str, first: usize, last: usize) -> String {
    let count = (last + 1).saturating_sub(first);
    text.split('\n')
        .skip(first)
        .take(count)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `old` occurs in `content`, as non-overlapping byte ranges of `content` from left to
/// right, and the form of `old` to quote in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Occurrences {
    /// The byte ranges of `content` that match.
    pub ranges: Vec<Range<usize>>,
    /// `old` with its tabs expanded (the form OpenManus quotes in its messages).
    pub quoted: String,
}

/// Finds `old` in `content`.
///
/// Exact occurrences are looked for first. Only when there is none, and a tab is involved (in the
/// file or in `old`), the search is repeated on the tab-expanded texts — the form `view` shows —
/// and a match counts only if it starts and ends on character boundaries of the original file
/// (never inside the spaces of one tab). The ranges always point into the original `content`.
pub(crate) fn find_occurrences(content: &str, old: &str) -> Occurrences {
    let quoted = expand_tabs(old).into_owned();
    let exact: Vec<Range<usize>> = content
        .match_indices(old)
        .map(|(start, found)| start..start + found.len())
        .collect();
    if !exact.is_empty() || quoted.is_empty() || !(content.contains('\t') || old.contains('\t')) {
        return Occurrences {
            ranges: exact,
            quoted,
        };
    }
    let file = expand(content, true);
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(position) = file.text[from..].find(&quoted) {
        let start = from + position;
        let end = start + quoted.len();
        match (file.original_offset(start), file.original_offset(end)) {
            (Some(original_start), Some(original_end)) => {
                ranges.push(original_start..original_end);
                from = end;
            }
            _ => {
                from = start + file.text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    Occurrences { ranges, quoted }
}

/// The 1-based numbers of the lines on which the `ranges` (sorted by start) begin, without
/// duplicates.
pub(crate) fn start_lines(content: &str, ranges: &[Range<usize>]) -> Vec<usize> {
    let mut lines: Vec<usize> = Vec::with_capacity(ranges.len());
    let (mut scanned, mut line) = (0usize, 1usize);
    for range in ranges {
        line += content[scanned..range.start].matches('\n').count();
        scanned = range.start;
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    }
    lines
}

/// Python's repr of a list of integers: `[1, 2, 3]`.
pub(crate) fn list_repr<T: std::fmt::Display>(items: &[T]) -> String {
    let inner: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("[{}]", inner.join(", "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::single_range_in_vec_init)]

    use super::*;

    #[test]
    fn expand_tabs_follows_python() {
        assert_eq!(expand_tabs("\tx"), "        x");
        assert_eq!(expand_tabs("ab\tc"), "ab      c");
        assert_eq!(expand_tabs("abcdefgh\ti"), "abcdefgh        i");
        assert_eq!(expand_tabs("a\n\tb"), "a\n        b");
        assert_eq!(expand_tabs("abc\r\td"), "abc\r        d");
        assert_eq!(expand_tabs("é\tx"), "é       x", "columns count characters");
        assert!(matches!(expand_tabs("no tabs"), Cow::Borrowed(_)));
    }

    #[test]
    fn clip_counts_characters() {
        let exact = "é".repeat(MAX_RESPONSE_LEN);
        assert_eq!(clip(&exact), exact);
        let long = "é".repeat(MAX_RESPONSE_LEN + 1);
        assert_eq!(
            clip(&long),
            format!("{}{TRUNCATED_MESSAGE}", "é".repeat(MAX_RESPONSE_LEN))
        );
    }

    #[test]
    fn cat_n_numbers_lines_in_six_columns() {
        assert_eq!(
            cat_n("a\n\tb\n", "/f", 9),
            "Here's the result of running `cat -n` on /f:\n     9\ta\n    10\t        b\n    11\t\n"
        );
        assert_eq!(
            cat_n("", "/f", 1),
            "Here's the result of running `cat -n` on /f:\n     1\t\n"
        );
        assert_eq!(
            cat_n("x", "/f", 1_234_567),
            "Here's the result of running `cat -n` on /f:\n1234567\tx\n"
        );
    }

    #[test]
    fn line_slice_clamps_like_python() {
        assert_eq!(line_slice("a\nb\nc", 0, 1), "a\nb");
        assert_eq!(line_slice("a\nb\nc", 1, 99), "b\nc");
        assert_eq!(line_slice("a\nb\nc", 5, 9), "");
    }

    #[test]
    fn exact_occurrences_come_first() {
        let found = find_occurrences("a\tb a\tb", "a\tb");
        assert_eq!(found.ranges, [0..3, 4..7]);
        assert_eq!(found.quoted, "a       b");
        assert!(find_occurrences("abc", "x").ranges.is_empty());
        assert_eq!(find_occurrences("aaa", "aa").ranges, [0..2]);
    }

    #[test]
    fn empty_old_str_matches_everywhere_like_python_count() {
        assert_eq!(find_occurrences("ab", "").ranges.len(), 3);
        assert_eq!(find_occurrences("", "").ranges, [0..0]);
    }

    #[test]
    fn tab_expanded_matching_maps_back_to_the_original() {
        let content = "all:\n\tgcc -o a a.c\n";
        let found = find_occurrences(content, "        gcc -o a");
        assert_eq!(found.ranges, [5..14]);
        assert_eq!(&content[5..14], "\tgcc -o a");

        // Spaces that cover only part of a tab never match.
        assert!(find_occurrences(content, "    gcc").ranges.is_empty());

        // A tab in old_str matches spaces in the file.
        let spaces = "x:\n        y\n";
        assert_eq!(find_occurrences(spaces, "\ty").ranges, [3..12]);
    }

    #[test]
    fn start_lines_are_deduplicated() {
        let content = "ab ab\nx\nab";
        let found = find_occurrences(content, "ab");
        assert_eq!(start_lines(content, &found.ranges), [1, 3]);
        let multi = "a\nb\na\nb";
        let found = find_occurrences(multi, "a\nb");
        assert_eq!(start_lines(multi, &found.ranges), [1, 3]);
    }

    #[test]
    fn list_repr_matches_python() {
        assert_eq!(list_repr(&[2, 1]), "[2, 1]");
        assert_eq!(list_repr::<usize>(&[]), "[]");
    }
}
