//! serde_json's error messages without the values they quote, and with at most an excerpt of the
//! names they quote.

use notify_core::escape::Excerpt;

/// serde_json's message for `e`, without the value it may quote: serde writes a mistyped or
/// invalid value into its message (`invalid type: string "K3YS3CRET", expected u64`), and the
/// value may be a secret under a redacted key (redaction runs after decoding). The value's kind
/// stays (`invalid type: a string, expected u64 at line 1 column 80`).
pub(super) fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let (message, position) = match text.strip_suffix(&position) {
        Some(message) => (message, position.as_str()),
        None => (text.as_str(), ""),
    };
    format!("{}{position}", without_values(message))
}

/// `message` with the value of serde's `invalid type: <unexpected>, expected <what>` (or
/// `invalid value: ...`) replaced by its kind, and the name in ``unknown variant `<name>` `` (or
/// ``unknown field `<name>` ``) cut to an [`Excerpt`]. serde writes the five kinds that hold a value as
/// ``boolean `true` ``, ``integer `5` ``, ``floating point `1.5` ``, ``character `c` `` and
/// `string "text"`; the others (`null`, `sequence`, `map`, ...) hold none and stay. The expected
/// part is this crate's text and holds no `, expected `, so the last one ends the value whatever
/// the value holds.
fn without_values(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some(end) = rest.rfind(", expected ") else { continue };
        let unexpected = &rest[..end];
        let kind = [
            ("boolean `", "a boolean"),
            ("integer `", "an integer"),
            ("floating point `", "a floating point number"),
            ("character `", "a character"),
            ("string \"", "a string"),
        ]
        .into_iter()
        .find_map(|(form, kind)| unexpected.starts_with(form).then_some(kind))
        .unwrap_or(unexpected);
        return format!("{prefix}{kind}{}", &rest[end..]);
    }
    // `unknown variant `<name>`, expected ...` (an enum's variant, the outcome say): the name is
    // no secret but it is the message's text, of any size: an excerpt of it.
    for prefix in ["unknown variant `", "unknown field `"] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        // serde's own text follows the name, and holds neither of these.
        let end = rest.rfind("`, expected ").or_else(|| rest.rfind("`, there are no "));
        let Some(end) = end else { continue };
        return format!("{prefix}{}{}", Excerpt::new(&rest[..end]), &rest[end..]);
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode, DecodeError, Encoding};

    /// Issue 33 item 12: `invalid type: string "K3YS3CRET"` reached the importer's warning.
    #[test]
    fn json_decode_errors_name_the_kind_of_a_mistyped_value_never_the_value() {
        let batch = |value: &str| {
            format!(
                r#"{{"version":2,"source":1,"events":[{{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[["api_key",{value}]],"cpu_time_ns":null,"allocations":null}}]}}"#
            )
        };
        // (the value, the token serde_json's position ends on, the reason)
        for (value, token, reason) in [
            (
                r#"{"U64":"K3YS3CRET"}"#,
                r#"ET""#,
                "invalid type: a string, expected u64",
            ),
            (
                r#"{"U64":"K3YS3CRET, expected u64"}"#,
                r#"64""#,
                "invalid type: a string, expected u64",
            ),
            (r#"{"Str":31337}"#, "37", "invalid type: an integer, expected a string"),
            (
                r#"{"Bool":31.337}"#,
                "37",
                "invalid type: a floating point number, expected a boolean",
            ),
            (r#"{"Str":true}"#, "true", "invalid type: a boolean, expected a string"),
            (r#"{"U64":-31337}"#, "37", "invalid value: an integer, expected u64"),
            (r#"{"Str":null}"#, "null", "invalid type: null, expected a string"),
            (r#"{"K3YS3CRET":1}"#, r#"ET""#, "unknown payload value variant"),
            (
                r#"{"Duration":{"secs":"K3YS3CRET","nanos":0}}"#,
                r#"ET""#,
                "invalid type: a string, expected u64",
            ),
        ] {
            let json = batch(value);
            let err = decode(Encoding::Json, json.as_bytes()).unwrap_err();
            let DecodeError::Malformed { reason: got, .. } = &err else {
                panic!("{err:?}")
            };
            let column = json.find(value).unwrap() + value.rfind(token).unwrap() + token.len();
            assert_eq!(got, &format!("{reason} at line 1 column {column}"), "{value}");
            assert!(
                !err.to_string().contains("31") && !err.to_string().contains("K3YS"),
                "{err}"
            );
        }
        let err = decode(Encoding::Json, br#"{"version":"K3YS3CRET"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed event batch (json encoding): invalid type: a string, expected u16 at line 1 column 22"
        );
        // Messages of other shapes are kept whole (what they quote is this crate's text).
        assert_eq!(without_values("missing field `name`"), "missing field `name`");
        assert_eq!(
            without_values("invalid length 1, expected a (key, payload value) pair"),
            "invalid length 1, expected a (key, payload value) pair"
        );
    }

    /// Issue 44 item 5: an unknown outcome of 1 MiB made a 1 MiB reason (and warning).
    #[test]
    fn i44_5_an_unknown_variant_name_is_quoted_as_an_excerpt() {
        let huge = "X".repeat(1 << 20);
        let json = format!(
            r#"{{"version":2,"source":1,"events":[{{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"{huge}","payload":[],"cpu_time_ns":null,"allocations":null}}]}}"#
        );
        let err = decode(Encoding::Json, json.as_bytes()).unwrap_err();
        let DecodeError::Malformed { reason, .. } = &err else {
            panic!("{err:?}")
        };
        let column = json.find(&huge).unwrap() + huge.len() + 1;
        assert_eq!(
            reason,
            &format!(
                "unknown variant `{}…[1048576 bytes]`, expected one of `Completed`, `Panicked`, `Cancelled` at line 1 column {column}",
                "X".repeat(64)
            )
        );
        assert_eq!(reason.len(), 172 + column.to_string().len());
        // A name that holds serde's own separator, and a short one, kept whole.
        let tricky = "a`, expected b";
        assert_eq!(
            without_values(&format!("unknown variant `{tricky}`, expected one of `A`")),
            "unknown variant `a`, expected b`, expected one of `A`"
        );
        assert_eq!(
            without_values("unknown field `x`, there are no fields"),
            "unknown field `x`, there are no fields"
        );
    }
}
