//! Unique keys in a structured line: no key is written twice, no value shadows another.
//!
//! **The rule.** A line's keys are claimed in line order: the line's own keys first (its facts,
//! [`LineKey`], then the keys of the nested groups, tags then payload, made unique once when the
//! logger is built), then the tags' fields, then the payload's. The first to claim a key keeps
//! it. A later claim of a key already taken is written instead as
//! 1. `<group>.<name>` (`payload.user`, `tags.level`) when it is a field placed
//!    [`Flat`](crate::Placement::Flat) and that key is free;
//! 2. otherwise the key with the first free suffix `~2`, `~3`, … (`level~2`,
//!    `payload.a.b~2`).
//!
//! So a fact is never shadowed by a field, a tag never by a payload field, and a line has each key
//! once, in JSON and in logfmt alike. In logfmt, where nested values become dotted keys, the
//! claims are those of the dotted keys, and a key's characters that would end or split it are
//! percent-encoded ([`push_logfmt_key`]): injective, so `a b`, `a_b` and `a=b` stay three keys.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::keys::{Keys, LineKey, Placement};

/// A group of fields of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    Tags,
    Payload,
}

impl Group {
    /// The prefix of a flat field renamed by rule 1.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Group::Tags => "tags",
            Group::Payload => "payload",
        }
    }
}

/// Where a group goes, its nested key made unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Nested(Box<str>),
    Flat,
    Omit,
}

/// A logger's own keys, unique, resolved once at build time.
#[derive(Clone, Debug)]
pub(crate) struct LineNames {
    facts: [Option<Box<str>>; 9],
    tags: Place,
    payload: Place,
    /// The summary line's `suppressed` and `interval_ms` keys (unique among its facts).
    pub(crate) suppressed: Box<str>,
    pub(crate) interval_ms: Box<str>,
}

/// `name` if not in `taken`, else `name~2`, `name~3`, … the first not in `taken`.
fn first_free(name: &str, taken: impl Fn(&str) -> bool) -> Cow<'_, str> {
    if !taken(name) {
        return Cow::Borrowed(name);
    }
    (2_u64..)
        .map(|n| format!("{name}~{n}"))
        .find(|candidate| !taken(candidate))
        .map(Cow::Owned)
        .expect("a finite set of keys leaves a suffix free")
}

impl LineNames {
    /// The keys of `keys`, made unique in line order. `logfmt`: an empty key is written `_`.
    pub(crate) fn new(keys: &Keys, logfmt: bool) -> LineNames {
        let mut taken: Vec<Box<str>> = Vec::new();
        let mut claim = |name: &str| -> Box<str> {
            let name = if logfmt && name.is_empty() { "_" } else { name };
            let unique: Box<str> = first_free(name, |k| taken.iter().any(|t| &**t == k)).into();
            taken.push(unique.clone());
            unique
        };
        let facts = LineKey::ALL.map(|fact| keys.name(fact).map(&mut claim));
        let mut place = |placement: &Placement| match placement {
            Placement::Nested(key) => Place::Nested(claim(key)),
            Placement::Flat => Place::Flat,
            Placement::Omit => Place::Omit,
        };
        let tags = place(keys.tags_placement());
        let payload = place(keys.payload_placement());
        let summary_taken = |k: &str| facts.iter().flatten().any(|f| &**f == k);
        LineNames {
            suppressed: first_free("suppressed", summary_taken).into(),
            interval_ms: first_free("interval_ms", summary_taken).into(),
            facts,
            tags,
            payload,
        }
    }

    /// The key of `fact`; `None` when it is left out.
    pub(crate) fn fact(&self, fact: LineKey) -> Option<&str> {
        self.facts[fact as usize].as_deref()
    }

    /// Where `group` goes.
    pub(crate) fn place(&self, group: Group) -> &Place {
        match group {
            Group::Tags => &self.tags,
            Group::Payload => &self.payload,
        }
    }

    /// Whether `key` is one of the line's own keys (a fact's, a nested group's).
    fn is_own(&self, key: &str) -> bool {
        let nested = |place: &Place| matches!(place, Place::Nested(k) if &**k == key);
        self.facts.iter().any(|k| k.as_deref() == Some(key)) || nested(&self.tags) || nested(&self.payload)
    }
}

/// The field keys claimed so far in one line (the line's own keys are claimed from the start).
pub(crate) struct Claimed<'n, 'a> {
    names: &'n LineNames,
    keys: HashSet<Cow<'a, str>>,
}

impl<'n, 'a> Claimed<'n, 'a> {
    pub(crate) fn new(names: &'n LineNames) -> Claimed<'n, 'a> {
        Claimed {
            names,
            keys: HashSet::new(),
        }
    }

    /// The line's own keys.
    pub(crate) fn names(&self) -> &'n LineNames {
        self.names
    }

    fn taken(&self, key: &str) -> bool {
        self.names.is_own(key) || self.keys.contains(key)
    }

    /// Claims `key` (rule 2): it, or its first free `~N` form.
    pub(crate) fn claim(&mut self, key: Cow<'a, str>) -> Cow<'a, str> {
        let unique = match first_free(&key, |k| self.taken(k)) {
            Cow::Borrowed(_) => key,
            Cow::Owned(suffixed) => Cow::Owned(suffixed),
        };
        self.keys.insert(unique.clone());
        unique
    }

    /// The name a flat field `name` of `group` is written under (rule 1, then rule 2), not yet
    /// claimed: a logfmt map value claims its dotted keys, not this one.
    pub(crate) fn flat_name(&self, group: Group, name: &'a str) -> Cow<'a, str> {
        if !self.taken(name) {
            return Cow::Borrowed(name);
        }
        let prefixed = format!("{}.{name}", group.prefix());
        match first_free(&prefixed, |k| self.taken(k)) {
            Cow::Borrowed(_) => Cow::Owned(prefixed),
            Cow::Owned(suffixed) => Cow::Owned(suffixed),
        }
    }
}

/// Whether `c` cannot be written as itself in a logfmt key: it would end or split the key (a
/// space, `=`, `"`), is a control or invisible character, or is `%`, the escape itself.
fn escaped_in_key(c: char) -> bool {
    c.is_whitespace() || c == '=' || c == '"' || c == '%' || notify_core::escape::needs_escape(c)
}

/// Writes `key` as a logfmt key: each character of [`escaped_in_key`] as `%XX` per UTF-8 byte
/// (uppercase hex, as in URLs), so distinct keys stay distinct; an empty key as `_`.
pub(crate) fn push_logfmt_key(out: &mut Vec<u8>, key: &str) {
    if key.is_empty() {
        out.push(b'_');
        return;
    }
    let mut utf8 = [0; 4];
    for c in key.chars() {
        let bytes = c.encode_utf8(&mut utf8).as_bytes();
        if escaped_in_key(c) {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            for &b in bytes {
                out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
        } else {
            out.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(raw: &str) -> String {
        let mut out = Vec::new();
        push_logfmt_key(&mut out, raw);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn logfmt_keys_are_percent_encoded_injectively() {
        assert_eq!(
            ["a b", "a_b", "a=b", "a%20b", "a\"b", "a\nb", "é.x"].map(key),
            ["a%20b", "a_b", "a%3Db", "a%2520b", "a%22b", "a%0Ab", "é.x"]
        );
    }

    #[test]
    fn own_keys_are_made_unique_in_line_order() {
        let keys = Keys::default()
            .rename(LineKey::Outcome, "level")
            .rename(LineKey::Location, "payload")
            .rename(LineKey::SpanId, "suppressed");
        let names = LineNames::new(&keys, false);
        assert_eq!(names.fact(LineKey::Level), Some("level"));
        assert_eq!(names.fact(LineKey::Outcome), Some("level~2"));
        assert_eq!(names.place(Group::Payload), &Place::Nested("payload~2".into()));
        assert_eq!(&*names.suppressed, "suppressed~2");
        let mut claimed = Claimed::new(&names);
        assert_eq!(claimed.flat_name(Group::Payload, "level"), "payload.level");
        assert_eq!(claimed.claim(Cow::Borrowed("payload.level")), "payload.level");
        assert_eq!(claimed.flat_name(Group::Payload, "level"), "payload.level~2");
    }
}
