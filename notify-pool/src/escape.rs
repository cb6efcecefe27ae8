//! [`Escaped`]: how the pool writes text it did not choose (event names, panic messages, labels)
//! into its own report lines, so that such text cannot forge a line or drive the terminal.

use std::fmt;

/// Displays a string with every character that `char::escape_debug` would escape written as its
/// escape (`\n`, `\r`, `\t`, `\u{1b}`, `\u{202e}`, …): control characters (newline, carriage
/// return, ESC and so the ANSI / OSC sequences), bidirectional overrides and other invisible
/// format characters. Quotes and backslashes are written as they are, so ordinary text reads
/// unchanged.
pub(crate) struct Escaped<'a>(pub(crate) &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().expect("found a char");
            write!(f, "{}", c.escape_debug())?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

fn needs_escape(c: char) -> bool {
    !matches!(c, '"' | '\'' | '\\') && {
        let mut escaped = c.escape_debug();
        escaped.next() != Some(c) || escaped.next().is_some()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn pool_escaped_neutralises_line_forging_and_terminal_sequences() {
        let hostile = "run.job\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}gnp.exe";
        assert_eq!(
            Escaped(hostile).to_string(),
            "run.job\\n[INFO  auth] admin logged in\\r\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{202e}gnp.exe"
        );
        assert_eq!(
            Escaped("plain \"quoted\" C:\\path é").to_string(),
            "plain \"quoted\" C:\\path é"
        );
    }
}
