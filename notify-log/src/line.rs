//! The last step before a line reaches the `log` facade ([`Line`]): control characters escaped, so a
//! formatting method that put raw user input in its line still cannot forge a line.

use std::fmt;

use notify_core::escape::{needs_escape, Escaped};

/// A line as a log subscriber writes it: every character [`notify_core::escape`] escapes is
/// escaped, except — only when colour is on — well-formed SGR sequences (`ESC [ digits/; m`, what
/// [`LogEvent::color`](crate::LogEvent::color) and [`LogEvent::elapsed`](crate::LogEvent::elapsed)
/// write), which change colours and nothing else.
pub(crate) struct Line<'a> {
    pub(crate) text: &'a str,
    pub(crate) keep_sgr: bool,
}

/// The length in bytes of the SGR sequence `text` starts with, if it starts with one.
fn sgr_len(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("\u{1b}[")?;
    let params = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count();
    (rest.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text;
        let mut run = 0;
        let mut chars = text.char_indices();
        while let Some((at, c)) = chars.next() {
            if !needs_escape(c) {
                continue;
            }
            f.write_str(&text[run..at])?;
            let sgr = if self.keep_sgr { sgr_len(&text[at..]) } else { None };
            match sgr {
                Some(len) => {
                    f.write_str(&text[at..at + len])?;
                    run = at + len;
                    // Skip the rest of the sequence (ASCII, one byte per char).
                    for _ in 1..len {
                        chars.next();
                    }
                }
                None => {
                    let end = at + c.len_utf8();
                    Escaped::new(&text[at..end]).fmt(f)?;
                    run = end;
                }
            }
        }
        f.write_str(&text[run..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, keep_sgr: bool) -> String {
        Line { text, keep_sgr }.to_string()
    }

    #[test]
    fn sgr_is_kept_only_with_colour_and_everything_else_is_escaped() {
        let text = "\u{1b}[1;36mName\u{1b}[0m\n[INFO  auth] x\r\u{1b}[2J\u{1b}]0;t\u{7}\u{202e}";
        assert_eq!(
            shown(text, true),
            "\u{1b}[1;36mName\u{1b}[0m\\n[INFO  auth] x\\r\\u{1b}[2J\\u{1b}]0;t\\u{7}\\u{202e}"
        );
        assert_eq!(
            shown(text, false),
            r"\u{1b}[1;36mName\u{1b}[0m\n[INFO  auth] x\r\u{1b}[2J\u{1b}]0;t\u{7}\u{202e}"
        );
        assert_eq!(shown("plain é", true), "plain é");
        assert_eq!(shown("\u{1b}[", true), r"\u{1b}[");
        assert_eq!(shown("\u{1b}[31", true), r"\u{1b}[31");
    }
}
