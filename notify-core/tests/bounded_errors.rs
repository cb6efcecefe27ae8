//! Issue 44 item 5: an error made from text that came from outside (a URL, a header, another
//! process's JSON) quotes at most an excerpt of it ([`Excerpt`]: 64 characters, escaped, and the
//! input's length), never the whole input: 1 MiB in used to make a 1 MiB message.

use notify_core::escape::Excerpt;
use notify_core::event::EventId;
use notify_core::TraceId;

/// 1 MiB of `c`.
fn mib(c: char) -> String {
    c.to_string().repeat(1 << 20)
}

/// What an excerpt of [`mib`]`(c)` shows.
fn shown(c: char) -> String {
    format!("{}…[1048576 bytes]", c.to_string().repeat(64))
}

#[test]
fn i44_5_a_trace_id_error_keeps_an_excerpt_of_its_input() {
    let err = mib('z').parse::<TraceId>().unwrap_err();
    let message = err.to_string();
    assert_eq!(
        message,
        format!("a trace id is 32 hex digits, not all zero: \"{}\"", shown('z'))
    );
    assert_eq!(message.len(), 44 + 64 + 18 + 1);
    // What the error holds is bounded too (its Debug shows all it keeps).
    assert!(format!("{err:?}").len() < 200, "{err:?}");
    // Escaped as notify's lines are: a path cannot forge a line or drive a terminal.
    let hostile = "\n\u{1b}]0;x\u{7}".parse::<TraceId>().unwrap_err();
    assert_eq!(
        hostile.to_string(),
        r#"a trace id is 32 hex digits, not all zero: "\n\u{1b}]0;x\u{7}""#
    );
}

#[test]
fn i44_5_an_event_id_error_shows_where_it_was_cut() {
    let message = mib('g').parse::<EventId>().unwrap_err().to_string();
    assert_eq!(
        message,
        format!("an event id is 16 hex digits, not all zero: \"{}\"", shown('g'))
    );
    assert_eq!(message.len(), 45 + 64 + 18 + 1);
}

#[test]
fn i44_5_an_excerpt_is_the_one_bound_for_all_of_them() {
    let excerpt = Excerpt::new(&mib('a'));
    assert_eq!(
        (excerpt.kept().len(), excerpt.input_len(), excerpt.is_cut()),
        (64, 1 << 20, true)
    );
    assert_eq!(excerpt.to_string(), shown('a'));
    // Characters, not bytes: a multi-byte input is never cut inside a character.
    let wide = Excerpt::new(&"é".repeat(100));
    assert_eq!(wide.to_string(), format!("{}…[200 bytes]", "é".repeat(64)));
    assert!(!Excerpt::new(&"a".repeat(64)).is_cut());
}

#[cfg(feature = "serde")]
mod serde_json_errors {
    use super::*;
    use notify_core::Event;

    /// The one-line object `{"name":"a","<field>":"<1 MiB of c>"}`, and the column of its
    /// last byte.
    fn document(field: &str, c: char) -> (String, usize) {
        let json = format!(r#"{{"name":"a","{field}":"{}"}}"#, mib(c));
        let column = json.len();
        (json, column)
    }

    #[test]
    fn i44_5_an_unknown_outcome_is_quoted_as_an_excerpt() {
        let (json, column) = document("outcome", 'x');
        let message = serde_json::from_str::<Event>(&json).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "unknown variant `{}`, expected one of `completed`, `panicked`, `cancelled` at line 1 column {column}",
                shown('x')
            )
        );
    }

    #[test]
    fn i44_5_a_bad_time_is_quoted_as_an_excerpt() {
        let (json, column) = document("start", 'y');
        let message = serde_json::from_str::<Event>(&json).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "invalid RFC 3339 UTC time \"{}\": the year is 4 digits at line 1 column {}",
                shown('y'),
                column - 1
            )
        );
    }

    #[test]
    fn i44_5_bad_ids_in_json_are_quoted_as_excerpts() {
        let json = format!("\"{}\"", mib('q'));
        let column = json.len();
        assert_eq!(
            serde_json::from_str::<EventId>(&json).unwrap_err().to_string(),
            format!(
                "invalid value: string \"{}\", expected an id: 16 hex digits in a string, or a number at line 1 column {column}",
                shown('q')
            )
        );
        assert_eq!(
            serde_json::from_str::<TraceId>(&json).unwrap_err().to_string(),
            format!("a trace id is 32 hex digits, not all zero: \"{}\"", shown('q'))
        );
        assert_eq!(
            serde_json::from_str::<notify_core::subscriber::SubscriberKind>(&json)
                .unwrap_err()
                .to_string(),
            format!(
                "unknown variant `{}`, expected one of `timed`, `monotonic`, `event`, `evented`, `silenceable`, `owned`",
                shown('q')
            )
        );
    }
}
