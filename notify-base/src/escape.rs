//! Escaping for the lines notify writes: text that came from outside (event names, panic messages,
//! payload values such as SQL binds typed by a user) cannot start a new line, move the cursor, clear
//! the screen, set the window title or reorder the text a reader sees.
//!
//! * [`Escaped`]: a `&str` shown escaped, optionally truncated ([`Escaped::truncated`]) so a 1 MB
//!   input does not make a 1 MB message.
//! * [`EscapedDisplay`]: anything that implements [`Display`](fmt::Display), shown escaped; what
//!   [`Value::escaped`](crate::Value::escaped) returns.
//! * [`EscapingWriter`]: a [`fmt::Write`] adapter that escapes everything written through it, for
//!   building such a display yourself.
//! * [`Excerpt`]: the owned, bounded copy of an input that an error keeps to quote it: at most 64
//!   characters and the input's length, whatever the input's size. Every error made from text
//!   that came from outside (a URL, a header, a message) quotes it through one.
//!
//! # What is escaped
//!
//! | characters | written as |
//! |---|---|
//! | newline, carriage return, tab, NUL | `\n`, `\r`, `\t`, `\0` |
//! | other C0 controls (U+0001–U+001F, ESC among them), DEL (U+007F), C1 controls (U+0080–U+009F, NEL and the 8-bit CSI/OSC among them) | `\u{1b}` (lower-case hex, as Rust's `char::escape_default`) |
//! | bidirectional formatting: ALM U+061C, LRM/RLM U+200E/U+200F, embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069 | `\u{202e}` |
//! | line and paragraph separators U+2028, U+2029 | `\u{2028}` |
//!
//! Everything else is written as it is, backslashes included, so ordinary text (paths, SQL, names)
//! reads unchanged. The result is for people reading logs, not a reversible encoding: the input
//! `a\nb` (backslash, n) and the input `a` newline `b` are written alike, but both stay on one line.
//! Formatting flags (width, fill, precision) are ignored.
//!
//! ```
//! use notify_core::escape::Escaped;
//! let name = "login.auth\n[INFO  auth] admin logged in\u{1b}]0;pwned\u{7}";
//! assert_eq!(
//!     Escaped::new(name).to_string(),
//!     r"login.auth\n[INFO  auth] admin logged in\u{1b}]0;pwned\u{7}"
//! );
//! ```

use std::fmt::{self, Write as _};

/// True when `c` is written escaped (see the [module docs](self)).
///
/// ```
/// use notify_core::escape::needs_escape;
/// assert!(needs_escape('\n') && needs_escape('\u{1b}') && needs_escape('\u{202e}'));
/// assert!(!needs_escape('a') && !needs_escape('\\') && !needs_escape('é'));
/// ```
#[inline]
pub fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// Writes `text` escaped to `out`: unescaped runs in one `write_str` each.
fn write_escaped(out: &mut dyn fmt::Write, text: &str) -> fmt::Result {
    let mut run = 0;
    for (at, c) in text.char_indices() {
        if !needs_escape(c) {
            continue;
        }
        out.write_str(&text[run..at])?;
        match c {
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            '\0' => out.write_str("\\0")?,
            c => write!(out, "\\u{{{:x}}}", c as u32)?,
        }
        run = at + c.len_utf8();
    }
    out.write_str(&text[run..])
}

/// A string shown with its control, bidirectional-formatting and line-separator characters escaped
/// (see the [module docs](self)); with [`Escaped::truncated`], at most a given number of its
/// characters.
///
/// ```
/// use notify_core::escape::Escaped;
/// assert_eq!(Escaped::new("a\r\nb").to_string(), r"a\r\nb");
/// assert_eq!(Escaped::new("plain").to_string(), "plain");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Escaped<'a> {
    text: &'a str,
    max_chars: Option<usize>,
}

impl<'a> Escaped<'a> {
    /// All of `text`, escaped.
    ///
    /// ```
    /// assert_eq!(notify_core::escape::Escaped::new("\u{202e}gpj.exe").to_string(), r"\u{202e}gpj.exe");
    /// ```
    pub fn new(text: &'a str) -> Escaped<'a> {
        Escaped { text, max_chars: None }
    }

    /// `text`, escaped; when it has more than `max_chars` characters (counted before escaping),
    /// only the first `max_chars` followed by `…[N bytes]`, N being the length of the whole
    /// input in bytes. Error messages use it to quote inputs.
    ///
    /// ```
    /// use notify_core::escape::Escaped;
    /// assert_eq!(Escaped::truncated("abcdef", 3).to_string(), "abc…[6 bytes]");
    /// assert_eq!(Escaped::truncated("abc", 3).to_string(), "abc");
    /// ```
    pub fn truncated(text: &'a str, max_chars: usize) -> Escaped<'a> {
        Escaped {
            text,
            max_chars: Some(max_chars),
        }
    }

    /// The input, unescaped.
    ///
    /// ```
    /// assert_eq!(notify_core::escape::Escaped::new("a\n").as_str(), "a\n");
    /// ```
    pub fn as_str(&self) -> &'a str {
        self.text
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut = self
            .max_chars
            .and_then(|max| self.text.char_indices().nth(max).map(|(at, _)| at));
        match cut {
            None => write_escaped(f, self.text),
            Some(at) => {
                write_escaped(f, &self.text[..at])?;
                write!(f, "…[{} bytes]", self.text.len())
            }
        }
    }
}

/// What an error keeps of the input it quotes: the first [`Excerpt::MAX_CHARS`] characters (or
/// fewer, [`Excerpt::with_max_chars`]) and the input's whole length in bytes; shown as
/// [`Escaped::truncated`] shows it (escaped; `…[N bytes]` after the kept characters when the input
/// was longer). An error that kept its whole input would make a 1 MB message (and hold 1 MB) out
/// of a 1 MB header or URL, and a server that echoes the message would answer with it.
///
/// ```
/// use notify_core::escape::Excerpt;
/// assert_eq!(Excerpt::new("xyz").to_string(), "xyz");
/// let huge = Excerpt::new(&"a".repeat(1 << 20));
/// assert_eq!(huge.to_string(), format!("{}…[1048576 bytes]", "a".repeat(64)));
/// assert_eq!((huge.kept(), huge.input_len()), ("a".repeat(64).as_str(), 1 << 20));
/// assert_eq!(Excerpt::with_max_chars("line\nfeed", 4).to_string(), "line…[9 bytes]");
/// assert_eq!(Excerpt::new("a\nb").to_string(), r"a\nb");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Excerpt {
    kept: Box<str>,
    input_len: usize,
}

impl Excerpt {
    /// The characters kept by [`Excerpt::new`]: enough to recognise an input, never a large
    /// message (at most 64 × 4 bytes kept, 64 × 8 bytes shown escaped).
    pub const MAX_CHARS: usize = 64;

    /// The first [`Excerpt::MAX_CHARS`] characters of `text`, and its length.
    pub fn new(text: &str) -> Excerpt {
        Excerpt::with_max_chars(text, Excerpt::MAX_CHARS)
    }

    /// The first `max_chars` characters of `text`, and its length.
    pub fn with_max_chars(text: &str, max_chars: usize) -> Excerpt {
        let end = text.char_indices().nth(max_chars).map_or(text.len(), |(at, _)| at);
        Excerpt {
            kept: text[..end].into(),
            input_len: text.len(),
        }
    }

    /// The characters kept, unescaped.
    pub fn kept(&self) -> &str {
        &self.kept
    }

    /// The length of the whole input, in bytes.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// True when the input was longer than what is kept.
    pub fn is_cut(&self) -> bool {
        self.kept.len() < self.input_len
    }
}

impl fmt::Display for Excerpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, &self.kept)?;
        if self.is_cut() {
            write!(f, "…[{} bytes]", self.input_len)?;
        }
        Ok(())
    }
}

/// A [`fmt::Write`] that escapes everything written through it (see the [module docs](self))
/// before passing it on to the inner writer.
///
/// ```
/// use std::fmt::Write;
/// use notify_core::escape::EscapingWriter;
/// let mut line = String::new();
/// write!(EscapingWriter::new(&mut line), "{}|{}", "a\nb", 7)?;
/// assert_eq!(line, r"a\nb|7");
/// # Ok::<(), std::fmt::Error>(())
/// ```
#[derive(Debug)]
pub struct EscapingWriter<W> {
    inner: W,
}

impl<W: fmt::Write> EscapingWriter<W> {
    /// Escapes into `inner`.
    ///
    /// ```
    /// let mut s = String::new();
    /// let _ = notify_core::escape::EscapingWriter::new(&mut s);
    /// ```
    pub fn new(inner: W) -> EscapingWriter<W> {
        EscapingWriter { inner }
    }

    /// The inner writer.
    ///
    /// ```
    /// let w = notify_core::escape::EscapingWriter::new(String::new());
    /// assert_eq!(w.into_inner(), "");
    /// ```
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: fmt::Write> fmt::Write for EscapingWriter<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(&mut self.inner, s)
    }
}

/// Any [`Display`](fmt::Display) value shown escaped (see the [module docs](self)): its `Display`
/// output goes through an [`EscapingWriter`].
///
/// ```
/// use notify_core::escape::EscapedDisplay;
/// let message = String::from("denied\n[INFO  auth] admin logged in");
/// assert_eq!(EscapedDisplay(&message).to_string(), r"denied\n[INFO  auth] admin logged in");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EscapedDisplay<D>(pub D);

impl<D: fmt::Display> fmt::Display for EscapedDisplay<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter::new(f), "{}", self.0)
    }
}

impl crate::payload::Value {
    /// This value's `Display`, escaped (see [`escape`](crate::escape)): what log subscribers show
    /// payload values with, so a value typed by a user (an SQL bind, a header) cannot forge a log
    /// line or send escape sequences to a terminal. The plain `Display` of [`Value`](crate::Value)
    /// writes text as it is.
    ///
    /// ```
    /// use notify_core::Value;
    /// let bind = Value::from("x'\n[INFO  auth] admin logged in");
    /// assert_eq!(bind.escaped().to_string(), r"x'\n[INFO  auth] admin logged in");
    /// assert_eq!(Value::from(42_u64).escaped().to_string(), "42");
    /// ```
    pub fn escaped(&self) -> EscapedDisplay<&Self> {
        EscapedDisplay(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newline, CR, ESC (a screen clear), OSC (a window title), a right-to-left override.
    const HOSTILE: &str = "a\n[INFO  auth] admin\r\u{1b}[2J\u{1b}]0;title\u{7}\u{202e}txt.exe\u{9b}\u{85}\u{2028}z";

    #[test]
    fn every_hostile_character_is_escaped() {
        let escaped = Escaped::new(HOSTILE).to_string();
        assert_eq!(
            escaped,
            r"a\n[INFO  auth] admin\r\u{1b}[2J\u{1b}]0;title\u{7}\u{202e}txt.exe\u{9b}\u{85}\u{2028}z"
        );
        assert!(!escaped.chars().any(needs_escape));
    }

    #[test]
    fn escaping_is_idempotent_on_its_output() {
        let once = Escaped::new(HOSTILE).to_string();
        assert_eq!(Escaped::new(&once).to_string(), once);
    }

    #[test]
    fn truncation_counts_characters_and_reports_bytes() {
        let big = "é".repeat(1 << 19); // 1 MiB
        let shown = Escaped::truncated(&big, 4).to_string();
        assert_eq!(shown, "éééé…[1048576 bytes]");
        assert_eq!(Escaped::truncated("\n\n\n", 2).to_string(), r"\n\n…[3 bytes]");
        assert_eq!(Escaped::truncated("", 0).to_string(), "");
        assert_eq!(Escaped::truncated("a", 0).to_string(), "…[1 bytes]");
    }

    #[test]
    fn an_excerpt_keeps_at_most_its_characters_and_shows_as_the_truncated_escape() {
        let big = "é".repeat(1 << 19); // 1 MiB
        let excerpt = Excerpt::new(&big);
        assert_eq!(excerpt.kept().len(), 2 * Excerpt::MAX_CHARS);
        assert_eq!(
            excerpt.to_string(),
            Escaped::truncated(&big, Excerpt::MAX_CHARS).to_string()
        );
        assert_eq!(excerpt.to_string().len(), 2 * 64 + "…[1048576 bytes]".len());
        for text in [HOSTILE, "", "a", "\n".repeat(70).as_str()] {
            for max in [0, 1, 5, 64, 1000] {
                let e = Excerpt::with_max_chars(text, max);
                assert_eq!(
                    e.to_string(),
                    Escaped::truncated(text, max).to_string(),
                    "{text:?} {max}"
                );
                assert_eq!(e.is_cut(), text.chars().count() > max);
                assert_eq!(e.input_len(), text.len());
            }
        }
    }

    #[test]
    fn values_and_displays_are_escaped() {
        let v = crate::Value::from(HOSTILE.to_owned());
        assert_eq!(v.escaped().to_string(), Escaped::new(HOSTILE).to_string());
        assert_eq!(EscapedDisplay(format_args!("{}|{}", "x\ty", 1)).to_string(), r"x\ty|1");
    }
}
