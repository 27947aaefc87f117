//! A forward-only reader over one JSON text, for the few fields a streamed chunk carries.
//!
//! A chunk is read many times a step, and most of it (ids, the object name, timestamps, the
//! index of the choice) is of no use to us: a derived `Deserialize` still walks each of those
//! values through serde's visitors. This reader walks the text once, borrows every string that
//! has no escape (and unescapes the others itself), and skips the rest while checking it. It
//! only ever says "this is the text's value" or "I cannot say" (`None`): anything unusual — a
//! field of an unexpected type, deep nesting, text after the value, anything that is not JSON
//! — is `None`, and the caller reads the text with `serde_json` instead, whose verdict then
//! stands.

use std::borrow::Cow;

/// Nesting deeper than this is left to `serde_json` (whose own limit is 128).
const DEEPEST: usize = 64;

/// The most digits before the point of a number the scan skips: any number with no more is
/// below `f64::MAX` (about 1.8e308), so serde_json reads it too.
const WHOLE_DIGITS: usize = 300;

/// The bytes that end the plain part of a string: the quote, the backslash and the control
/// characters (which JSON does not allow raw).
const STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stop[byte] = true;
        byte += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// Where the first byte of `bytes` that ends a string's plain part ([`STOP`]) is. (Looking
/// at eight bytes at a time cost more: a chunk's strings are a few bytes long.)
fn plain_len(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| STOP[usize::from(b)])
}

/// The text of a string's content with escapes (`\n`, `\u00e9`, a surrogate pair...);
/// `None` for an escape JSON does not have (a lone surrogate among them).
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(rest.get(..at)?);
        let escape = rest.get(at + 1..)?;
        let (unescaped, used) = match escape.as_bytes().first()? {
            b'"' => ('"', 1),
            b'\\' => ('\\', 1),
            b'/' => ('/', 1),
            b'b' => ('\u{8}', 1),
            b'f' => ('\u{c}', 1),
            b'n' => ('\n', 1),
            b'r' => ('\r', 1),
            b't' => ('\t', 1),
            b'u' => {
                let unit = hex4(escape.get(1..5)?)?;
                if (0xD800..0xDC00).contains(&unit) {
                    let low = hex4(escape.get(5..11)?.strip_prefix("\\u")?)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    (char::from_u32(code)?, 11)
                } else {
                    // A lone low surrogate is no char.
                    (char::from_u32(unit)?, 5)
                }
            }
            _ => return None,
        };
        out.push(unescaped);
        rest = escape.get(used..)?;
    }
    out.push_str(rest);
    Some(out)
}

/// Four hex digits.
fn hex4(digits: &str) -> Option<u32> {
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// A position in one JSON text.
pub(super) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after any whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `byte` if it comes next (after whitespace).
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// Whether only whitespace is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Consumes `word` (`null`, `true`, `false`) if it comes next.
    fn word<const N: usize>(&mut self, word: &[u8; N]) -> bool {
        self.peek();
        let next = self
            .bytes()
            .get(self.at..self.at + N)
            .is_some_and(|next| next == word);
        if next {
            self.at += N;
        }
        next
    }

    /// Consumes `null` if it comes next.
    pub(super) fn null(&mut self) -> bool {
        self.word(b"null")
    }

    /// Consumes the opening quote of a string and says where its plain part (up to the first
    /// quote, backslash or control character) ends.
    fn open_string(&mut self) -> Option<usize> {
        if !self.eat(b'"') {
            return None;
        }
        Some(self.at + plain_len(self.bytes().get(self.at..)?)?)
    }

    /// A key: borrowed; one with an escape is left to `serde_json` (`None`).
    pub(super) fn key(&mut self) -> Option<&'a str> {
        let end = self.open_string()?;
        let start = self.at;
        if self.bytes().get(end) != Some(&b'"') {
            return None;
        }
        self.at = end + 1;
        self.text.get(start..end)
    }

    /// A string: borrowed when it has no escape, else unescaped ([`unescape`]).
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        let mut end = self.open_string()?;
        let start = self.at;
        let bytes = self.bytes();
        let mut escaped = false;
        loop {
            match *bytes.get(end)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    // The escaped byte cannot end the string; [`unescape`] checks the escape.
                    end += 2;
                    end += plain_len(bytes.get(end..)?)?;
                }
                // A raw control character is not JSON.
                _ => return None,
            }
        }
        self.at = end + 1;
        if escaped {
            unescape(self.text.get(start..end)?).map(Cow::Owned)
        } else {
            self.text.get(start..end).map(Cow::Borrowed)
        }
    }

    /// `null` (`Some(None)`), or what `read` reads (`Some(Some(_))`); `None` when `read`
    /// cannot read what comes.
    pub(super) fn or_null<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.null() {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    /// A string or `null` (`Some(None)`); anything else is `None`.
    pub(super) fn string_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.or_null(Self::string)
    }

    /// A non-negative integer that fits a `u64`; a fraction, an exponent or a sign is `None`.
    pub(super) fn unsigned(&mut self) -> Option<u64> {
        self.peek()?;
        let start = self.at;
        let digits = self.digits();
        if digits == 0
            || (digits > 1 && self.bytes().get(start) == Some(&b'0'))
            || matches!(self.bytes().get(self.at), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.text.get(start..self.at)?.parse().ok()
    }

    /// Consumes a run of ASCII digits and says how long it was.
    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.bytes().get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    /// Any number, checked against JSON's grammar. One serde_json might find out of range (an
    /// exponent, or more than [`WHOLE_DIGITS`] digits before the point) is `None`: the scan
    /// declines it, and the `Value` reading decides.
    fn number(&mut self) -> Option<()> {
        self.peek()?;
        if self.bytes().get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let start = self.at;
        let whole = self.digits();
        if whole == 0
            || whole > WHOLE_DIGITS
            || (whole > 1 && self.bytes().get(start) == Some(&b'0'))
        {
            return None;
        }
        if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        // `1e400` is JSON, but too large for an `f64`: serde_json calls it an error.
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E')) {
            return None;
        }
        Some(())
    }

    /// Skips one value of any kind, checking it is JSON.
    pub(super) fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > DEEPEST {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(|scan, _| scan.skip(depth + 1)),
            b'[' => self.array(|scan, _| scan.skip(depth + 1)),
            b'"' => self.string().map(drop),
            b'n' => self.null().then_some(()),
            b't' => self.word(b"true").then_some(()),
            b'f' => self.word(b"false").then_some(()),
            _ => self.number(),
        }
    }

    /// The text of the next value, skipped (checked) on the way.
    pub(super) fn raw(&mut self, depth: usize) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        self.skip(depth)?;
        self.text.get(start..self.at)
    }

    /// An object: `member` is called with each key and must consume the key's value.
    pub(super) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.key()?;
            if !self.eat(b':') {
                return None;
            }
            member(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// An object read into a `T`, from its default: `member` reads each key's value into it.
    pub(super) fn fields<T: Default>(
        &mut self,
        mut member: impl FnMut(&mut T, &mut Self, &'a str) -> Option<()>,
    ) -> Option<T> {
        let mut value = T::default();
        self.object(|scan, key| member(&mut value, scan, key))?;
        Some(value)
    }

    /// An array: `element` is called with each element's position and must consume it.
    pub(super) fn array(
        &mut self,
        mut element: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        let mut at = 0;
        loop {
            element(self, at)?;
            at += 1;
            if self.eat(b']') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the reader takes `text` as one whole JSON value.
    fn skips_whole(text: &str) -> bool {
        let mut scan = Scan::new(text);
        scan.skip(0).is_some() && scan.at_end()
    }

    #[test]
    fn json_is_taken_and_what_is_not_json_is_refused() {
        for good in [
            "0",
            "-0.5",
            r#" { "a" : [1, true, false, null, "x\n\u00e9", {}] } "#,
            "[]",
            r#""caf\u00e9 \ud83d\ude00""#,
            "\"é ✓\"",
        ] {
            assert!(skips_whole(good), "{good}");
            assert!(serde_json::from_str::<serde_json::Value>(good).is_ok());
        }
        for bad in [
            "",
            "01",
            "1.",
            "-",
            "1e",
            ".5",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "\"tab\there\"",
            r#""\x""#,
            r#""\ud800""#,
            "\"open",
            "nul",
            "[1] 2",
            "tru",
            "+1",
        ] {
            assert!(!skips_whole(bad), "{bad}");
        }
    }

    #[test]
    fn strings_are_borrowed_unless_escaped() {
        let mut scan = Scan::new(r#""plain" "a\"b""#);
        assert!(matches!(scan.string(), Some(Cow::Borrowed("plain"))));
        assert_eq!(scan.string().as_deref(), Some("a\"b"));
        assert!(scan.at_end());
    }

    #[test]
    fn escapes_read_as_serde_json_reads_them() {
        for text in [
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""caf\u00e9 \ud83d\ude00 \u0000 \uFFFF""#,
            r#""\\u0000""#,
        ] {
            let expected: String = serde_json::from_str(text).unwrap();
            assert_eq!(Scan::new(text).string().as_deref(), Some(expected.as_str()));
        }
        for text in [
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\u12g4""#,
            r#""\u+123""#,
            r#""\x""#,
        ] {
            assert!(serde_json::from_str::<String>(text).is_err(), "{text}");
            assert_eq!(Scan::new(text).string(), None, "{text}");
        }
    }

    #[test]
    fn numbers_serde_json_may_refuse_are_declined() {
        let huge = format!("1{}", "0".repeat(WHOLE_DIGITS));
        let largest = format!("-9{}.5", "9".repeat(WHOLE_DIGITS - 1));
        for (text, skipped) in [
            ("-12.5", true),
            ("0", true),
            (largest.as_str(), true),
            ("-1790312e985159153832", false),
            ("1E400", false),
            ("1e5", false),
            (huge.as_str(), false),
        ] {
            let mut scan = Scan::new(text);
            assert_eq!(scan.number().is_some() && scan.at_end(), skipped, "{text}");
            if skipped {
                assert!(
                    serde_json::from_str::<serde_json::Value>(text).is_ok(),
                    "{text}"
                );
            }
        }
        assert!(serde_json::from_str::<serde_json::Value>("1E400").is_err());
    }

    #[test]
    fn unsigned_integers_only() {
        for (text, expected) in [
            ("0", Some(0)),
            ("42", Some(42)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("-1", None),
            ("1.0", None),
            ("1e2", None),
            ("007", None),
            ("\"1\"", None),
        ] {
            assert_eq!(Scan::new(text).unsigned(), expected, "{text}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let deep = format!("{}{}", "[".repeat(DEEPEST + 2), "]".repeat(DEEPEST + 2));
        assert!(!skips_whole(&deep));
        let shallow = format!("{}{}", "[".repeat(DEEPEST), "]".repeat(DEEPEST));
        assert!(skips_whole(&shallow));
    }
}
