//! logfmt lines of a [`StructuredLogger`](crate::StructuredLogger): `key=value` pairs separated
//! by one space, nested values as dotted keys, every key once (see
//! [`structured`](crate::structured#unique-keys)).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::SystemTime;

use log::Level;
use notify_core::context::Tags;
use notify_core::escape::needs_escape;
use notify_core::Value;

use crate::facts::{millis, non_finite, Facts, LocationText, SpanHex};
use crate::json::JsonValue;
use crate::keys::LineKey;
use crate::line_keys::{push_logfmt_key, Claimed, Group, LineNames, Place};

/// A logfmt line being written: pairs separated by one space, field keys claimed once.
pub(crate) struct Logfmt<'b, 'n, 'a> {
    out: &'b mut Vec<u8>,
    claimed: Claimed<'n, 'a>,
}

impl<'b, 'n, 'a> Logfmt<'b, 'n, 'a> {
    pub(crate) fn new(out: &'b mut Vec<u8>, names: &'n LineNames) -> Logfmt<'b, 'n, 'a> {
        Logfmt {
            out,
            claimed: Claimed::new(names),
        }
    }

    /// `key=`, the key percent-encoded where it must be (one of the line's own keys, or one
    /// already claimed).
    fn key(&mut self, key: &str) {
        if !self.out.is_empty() {
            self.out.push(b' ');
        }
        push_logfmt_key(self.out, key);
        self.out.push(b'=');
    }

    /// A value known to need no quoting (numbers, ids, times, levels).
    pub(crate) fn raw(&mut self, key: &str, value: &str) {
        self.key(key);
        self.out.extend_from_slice(value.as_bytes());
    }

    /// `key=` then what `value` displays (known to need no quoting).
    fn shown(&mut self, key: &str, value: impl std::fmt::Display) {
        self.key(key);
        let _ = write!(ByteWriter(self.out), "{value}");
    }

    /// A text value, quoted and escaped when it must be.
    pub(crate) fn text(&mut self, key: &str, value: &str) {
        self.key(key);
        let plain = !value.is_empty()
            && !value
                .chars()
                .any(|c| c.is_whitespace() || c == '=' || c == '"' || c == '\\' || needs_escape(c));
        if plain {
            self.out.extend_from_slice(value.as_bytes());
            return;
        }
        self.out.push(b'"');
        let mut utf8 = [0; 4];
        for c in value.chars() {
            match c {
                '"' => self.out.extend_from_slice(b"\\\""),
                '\\' => self.out.extend_from_slice(b"\\\\"),
                '\n' => self.out.extend_from_slice(b"\\n"),
                '\r' => self.out.extend_from_slice(b"\\r"),
                '\t' => self.out.extend_from_slice(b"\\t"),
                c if needs_escape(c) || (c.is_whitespace() && c != ' ') => {
                    let _ = write!(ByteWriter(self.out), "\\u{{{:x}}}", c as u32);
                }
                c => self.out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
            }
        }
        self.out.push(b'"');
    }

    /// A field's value under `key`: maps as dotted keys, an exception as `key.type` and
    /// `key.message`, lists as quoted JSON; each key written is claimed (made unique) here.
    fn value(&mut self, key: Cow<'a, str>, value: &Value) {
        match value {
            Value::Map(payload) => {
                for (k, v) in payload.iter() {
                    self.value(Cow::Owned(format!("{key}.{k}")), v);
                }
            }
            Value::Exception { type_name, message } => {
                let type_key = self.claimed.claim(Cow::Owned(format!("{key}.type")));
                self.text(&type_key, type_name);
                let message_key = self.claimed.claim(Cow::Owned(format!("{key}.message")));
                self.text(&message_key, message);
            }
            _ => {
                let key = self.claimed.claim(key);
                self.scalar(&key, value);
            }
        }
    }

    /// A value that is not a map or an exception.
    fn scalar(&mut self, key: &str, value: &Value) {
        match value {
            Value::Null => self.raw(key, "null"),
            Value::Bool(b) => self.raw(key, if *b { "true" } else { "false" }),
            Value::I64(_) | Value::U64(_) | Value::I128(_) | Value::U128(_) => self.shown(key, value),
            Value::F64(f) if f.is_finite() => self.shown(key, f),
            Value::F64(f) => self.raw(key, non_finite(*f)),
            Value::Str(text) => self.text(key, text),
            Value::Duration(d) => self.shown(key, millis(*d)),
            Value::Time(t) => self.shown(key, humantime::format_rfc3339_micros(*t)),
            Value::List(_) => {
                let json = serde_json::to_string(&JsonValue(value)).unwrap_or_default();
                self.text(key, &json);
            }
            other => self.text(key, &other.to_string()),
        }
    }

    /// The fields of `group`, as `names` places them.
    fn group(&mut self, names: &LineNames, group: Group, fields: impl Iterator<Item = (&'a str, &'a Value)>) {
        match names.place(group) {
            Place::Nested(prefix) => {
                for (k, v) in fields {
                    self.value(Cow::Owned(format!("{prefix}.{k}")), v);
                }
            }
            Place::Flat => {
                for (k, v) in fields {
                    let name = self.claimed.flat_name(group, if k.is_empty() { "_" } else { k });
                    self.value(name, v);
                }
            }
            Place::Omit => {}
        }
    }
}

/// `fmt::Write` into a byte vector.
pub(crate) struct ByteWriter<'a>(pub(crate) &'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Writes the logfmt line of `facts` into `out`.
pub(crate) fn write_logfmt<'a>(
    out: &mut Vec<u8>,
    names: &LineNames,
    now: SystemTime,
    level: Level,
    facts: &Facts<'a>,
    tags: &'a Tags,
) {
    let mut line = Logfmt::new(out, names);
    if let Some(k) = names.fact(LineKey::Time) {
        line.shown(k, humantime::format_rfc3339_micros(now));
    }
    if let Some(k) = names.fact(LineKey::Level) {
        line.raw(k, &level.as_str().to_ascii_lowercase());
    }
    if let Some(k) = names.fact(LineKey::Event) {
        line.text(k, facts.name);
    }
    if let (Some(k), Some(d)) = (names.fact(LineKey::Duration), facts.duration) {
        line.shown(k, millis(d));
    }
    if let Some(k) = names.fact(LineKey::Outcome) {
        line.raw(k, facts.outcome.as_str());
    }
    if let (Some(k), Some(t)) = (names.fact(LineKey::TraceId), facts.trace_id) {
        line.shown(k, t);
    }
    if let Some(k) = names.fact(LineKey::SpanId) {
        line.shown(k, SpanHex(facts.id));
    }
    if let (Some(k), Some(p)) = (names.fact(LineKey::ParentId), facts.parent_id) {
        line.shown(k, SpanHex(p));
    }
    if let (Some(k), Some(l)) = (names.fact(LineKey::Location), facts.location) {
        line.text(k, &LocationText(l).to_string());
    }
    line.group(names, Group::Tags, tags.iter());
    line.group(names, Group::Payload, facts.payload.iter());
}
