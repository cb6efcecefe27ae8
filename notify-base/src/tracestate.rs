//! [`TraceState`]: the W3C `tracestate` header (Trace Context Level 2, "tracestate Header Field
//! Values" and "Mutating the tracestate Field").

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::trace_error::TraceContextError;

/// A W3C `tracestate`: vendor-specific `key=value` members, carried opaque (notify reads none of
/// them) and bounded: at most [`TraceState::MAX_MEMBERS`] members and [`TraceState::MAX_LEN`]
/// characters as formatted. Cloning it is a reference-count increment (none when empty).
///
/// Parsing follows the Level 2 text and the W3C test suite (strict level 2):
///
/// * members are separated by `,` with optional spaces and tabs around them; empty members are
///   skipped; several header values are one list, in order;
/// * a key is 1 to 256 characters, the first a lowercase letter or a digit, the others lowercase
///   letters, digits, `_`, `-`, `*`, `/` and `@` (Level 2's grammar: multi-tenant keys such as
///   `tenant@system` and any other use of `@` after the first character);
/// * a value is 1 to 256 printable ASCII characters but `,` and `=`, not ending with a space;
/// * a key that appears again is dropped (the first member of that key is kept: the specification
///   lets a vendor discard duplicates), counted in
///   [`ExtractStats::tracestate_members_dropped`](crate::trace_context::ExtractStats::tracestate_members_dropped);
/// * a member that is not a valid `key=value`, or more than 32 members, discard the whole list
///   (an error);
/// * a valid list longer than 512 characters is truncated as the specification says: members
///   longer than 128 characters are removed first, then members from the end, until it fits
///   (counted like duplicates).
///
/// ```
/// use notify_core::trace_context::TraceState;
/// let state = TraceState::from_values(["rojo=00f067aa0ba902b7", " congo=t61rcWkgMzE "])?;
/// assert_eq!(state.get("congo"), Some("t61rcWkgMzE"));
/// assert_eq!(state.to_string(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
/// assert_eq!("foo=1,foo=2,bar=3".parse::<TraceState>()?.as_str(), "foo=1,bar=3");
/// assert_eq!("acme@fw=1".parse::<TraceState>()?.get("acme@fw"), Some("1"));
/// assert!("FOO=1".parse::<TraceState>().is_err());
/// # Ok::<(), notify_core::trace_context::TraceContextError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceState {
    /// The members joined by `,`, no whitespace; `None` when there is none.
    list: Option<Arc<str>>,
}

/// Members dropped from valid lists: duplicates and truncation to 512 characters.
pub(crate) static MEMBERS_DROPPED: AtomicU64 = AtomicU64::new(0);

impl TraceState {
    /// The most members a `tracestate` may have.
    pub const MAX_MEMBERS: usize = 32;
    /// The most characters kept (members longer than 128 characters are dropped first to fit).
    pub const MAX_LEN: usize = 512;

    /// The empty `tracestate`.
    pub const fn new() -> TraceState {
        TraceState { list: None }
    }

    /// The `tracestate` of one or more header values, in order (HTTP allows the header to be
    /// split over several fields).
    ///
    /// # Errors
    ///
    /// [`TraceContextError::TraceStateMember`] or [`TraceContextError::TraceStateTooManyMembers`]:
    /// the whole list is to be discarded.
    pub fn from_values<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<TraceState, TraceContextError> {
        let mut members: Vec<&str> = Vec::new();
        let mut dropped = 0_u64;
        for value in values {
            for member in value.split(',').map(trim_ows).filter(|m| !m.is_empty()) {
                let key = valid_member(member)?;
                if members.iter().any(|m| member_key(m) == key) {
                    dropped += 1;
                    continue;
                }
                if members.len() == TraceState::MAX_MEMBERS {
                    return Err(TraceContextError::TraceStateTooManyMembers);
                }
                members.push(member);
            }
        }
        let before = members.len();
        let members = fit(members);
        dropped += (before - members.len()) as u64;
        if dropped > 0 {
            MEMBERS_DROPPED.fetch_add(dropped, Ordering::Relaxed);
        }
        Ok(TraceState::joined(&members))
    }

    fn joined(members: &[&str]) -> TraceState {
        TraceState {
            list: (!members.is_empty()).then(|| Arc::from(members.join(","))),
        }
    }

    /// The value of `key`, if the list has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The members as `(key, value)`, in order (the most recently updated vendor first).
    pub fn members(&self) -> impl Iterator<Item = (&str, &str)> {
        self.as_str()
            .split(',')
            .filter(|m| !m.is_empty())
            .filter_map(|m| m.split_once('='))
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members().count()
    }

    /// True when there is no member (then no `tracestate` header is sent).
    pub fn is_empty(&self) -> bool {
        self.list.is_none()
    }

    /// The header value: the members joined by `,`.
    pub fn as_str(&self) -> &str {
        self.list.as_deref().unwrap_or("")
    }

    /// The same list with `key=value` as its first member: a vendor adding or updating its own
    /// entry, as the specification asks ("modified keys MUST be moved to the beginning"; an
    /// existing member of that key is removed, the others keep their order). A 33rd member pushes
    /// the right-most one out; the result is truncated to 512 characters as parsing does.
    ///
    /// # Errors
    ///
    /// [`TraceContextError::TraceStateMember`] when `key` or `value` is not valid.
    ///
    /// ```
    /// use notify_core::trace_context::TraceState;
    /// let state: TraceState = "a=1,b=2".parse()?;
    /// assert_eq!(state.with("b", "3")?.as_str(), "b=3,a=1");
    /// assert!(state.with("B", "3").is_err());
    /// # Ok::<(), notify_core::trace_context::TraceContextError>(())
    /// ```
    pub fn with(&self, key: &str, value: &str) -> Result<TraceState, TraceContextError> {
        let member = format!("{key}={value}");
        valid_member(&member)?;
        let mut members = vec![member.as_str()];
        members.extend(
            self.as_str()
                .split(',')
                .filter(|m| !m.is_empty() && member_key(m) != key),
        );
        members.truncate(TraceState::MAX_MEMBERS);
        Ok(TraceState::joined(&fit(members)))
    }

    /// The same list without the member of `key` (a vendor deleting its own entry).
    ///
    /// ```
    /// let state: notify_core::trace_context::TraceState = "a=1,b=2".parse().unwrap();
    /// assert_eq!(state.without("a").as_str(), "b=2");
    /// assert!(state.without("a").without("b").is_empty());
    /// ```
    #[must_use]
    pub fn without(&self, key: &str) -> TraceState {
        let members: Vec<&str> = self
            .as_str()
            .split(',')
            .filter(|m| !m.is_empty() && member_key(m) != key)
            .collect();
        TraceState::joined(&members)
    }
}

impl fmt::Display for TraceState {
    /// The header value ([`TraceState::as_str`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TraceState {
    type Err = TraceContextError;

    /// [`TraceState::from_values`] of one header value.
    fn from_str(text: &str) -> Result<TraceState, TraceContextError> {
        TraceState::from_values([text])
    }
}

/// Spaces and tabs (HTTP's optional whitespace) around `text` removed.
fn trim_ows(text: &str) -> &str {
    text.trim_matches(|c| c == ' ' || c == '\t')
}

/// The key of a member already checked.
fn member_key(member: &str) -> &str {
    member.split_once('=').map_or(member, |(k, _)| k)
}

/// `members` without those that make the list longer than [`TraceState::MAX_LEN`]: members over
/// 128 characters go first, then members from the end.
fn fit(mut members: Vec<&str>) -> Vec<&str> {
    let len = |m: &[&str]| m.iter().map(|s| s.len()).sum::<usize>() + m.len().saturating_sub(1);
    while len(&members) > TraceState::MAX_LEN {
        match members.iter().rposition(|m| m.len() > 128) {
            Some(at) => members.remove(at),
            None => members.pop().unwrap_or_default(),
        };
    }
    members
}

/// The key of `member` when it is a valid `key=value` list member.
fn valid_member(member: &str) -> Result<&str, TraceContextError> {
    let (key, value) = member.split_once('=').ok_or(TraceContextError::TraceStateMember)?;
    if valid_key(key.as_bytes()) && valid_value(value.as_bytes()) {
        Ok(key)
    } else {
        Err(TraceContextError::TraceStateMember)
    }
}

/// Level 2: `key = ( lcalpha / DIGIT ) 0*255 ( keychar )`,
/// `keychar = lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@"`.
fn valid_key(key: &[u8]) -> bool {
    let keychar = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/' | b'@');
    match key.split_first() {
        Some((&first, rest)) => {
            key.len() <= 256
                && (first.is_ascii_lowercase() || first.is_ascii_digit())
                && rest.iter().all(|&c| keychar(c))
        }
        None => false,
    }
}

/// `0*255(chr) nblk-chr`: 1 to 256 printable ASCII characters but `,` and `=`, spaces allowed
/// except last.
fn valid_value(value: &[u8]) -> bool {
    let nblk = |c: u8| (0x21..=0x7e).contains(&c) && c != b',' && c != b'=';
    match value.split_last() {
        Some((&last, rest)) => value.len() <= 256 && nblk(last) && rest.iter().all(|&c| c == b' ' || nblk(c)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(values: &[&str]) -> Result<TraceState, TraceContextError> {
        TraceState::from_values(values.iter().copied())
    }

    /// The tracestate cases of the W3C test suite (strict level 2, Level 2 key grammar), each
    /// with its exact outcome.
    #[test]
    fn i45_2_tracestate_cases_of_the_w3c_level_2_text() {
        use TraceContextError as E;
        // Empty values are accepted and send nothing.
        assert_eq!(state(&[""]), Ok(TraceState::new()));
        assert!(state(&[" , \t,"]).unwrap().is_empty());
        assert_eq!(state(&["foo=1", ""]).unwrap().get("foo"), Some("1"));
        assert_eq!(state(&["", "foo=1"]).unwrap().get("foo"), Some("1"));
        // Several fields are one list, in order.
        let joined = state(&["foo=1,bar=2", "rojo=1,congo=2", "baz=3"]).unwrap();
        assert_eq!(joined.as_str(), "foo=1,bar=2,rojo=1,congo=2,baz=3");
        // A repeated key: only the repeat is dropped.
        for (values, kept) in [
            (&["foo=1,foo=1"][..], "foo=1"),
            (&["foo=1,foo=2"], "foo=1"),
            (&["foo=1", "foo=1"], "foo=1"),
            (&["foo=1", "foo=2"], "foo=1"),
            (&["a=1,foo=1,b=2", "foo=2,c=3"], "a=1,foo=1,b=2,c=3"),
        ] {
            assert_eq!(state(values).unwrap().as_str(), kept, "{values:?}");
        }
        // Every allowed character.
        let key = "abcdefghijklmnopqrstuvwxyz0123456789_-*/@";
        let value: String = (0x20_u8..=0x2b)
            .chain(0x2d..=0x3c)
            .chain(0x3e..=0x7e)
            .map(char::from)
            .collect();
        let all = state(&[&format!("{key}={value}")]).unwrap();
        assert_eq!(all.get(key), Some(value.as_str()));
        // Optional whitespace around members.
        for text in ["foo=1 \t , \t bar=2, \t baz=3", "foo=1\t \t,\t \tbar=2,\t \tbaz=3"] {
            assert_eq!(state(&[text]).unwrap().as_str(), "foo=1,bar=2,baz=3");
        }
        for text in [" foo=1", "\tfoo=1", "foo=1 ", "foo=1\t", "\t foo=1 \t"] {
            assert_eq!(state(&[text]).unwrap().as_str(), "foo=1", "{text:?}");
        }
        // Level 2 keys: `@` anywhere after the first character; a digit may start a key.
        for text in ["foo@=1,bar=2", "foo@@bar=1,bar=2", "foo@bar@baz=1,bar=2", "7up=1,bar=2"] {
            let s = state(&[text]).unwrap();
            assert_eq!((s.len(), s.get("bar")), (2, Some("2")), "{text:?}");
        }
        // Invalid members discard the whole list.
        for text in [
            "foo =1",
            "FOO=1",
            "foo.bar=1",
            "@foo=1,bar=2",
            "_foo=1",
            "foo=bar=baz",
            "foo=,bar=3",
            "foo",
            "foo=1 x\u{7f}",
        ] {
            assert_eq!(state(&[text]), Err(E::TraceStateMember), "{text:?}");
        }
        // 32 members are kept, 33 discard the list.
        let members: Vec<String> = (1..=33).map(|i| format!("bar{i:02}={i:02}")).collect();
        let thirty_two = state(&[&members[..32].join(",")]).unwrap();
        assert_eq!((thirty_two.len(), thirty_two.get("bar01")), (32, Some("01")));
        assert_eq!(state(&[&members.join(",")]), Err(E::TraceStateTooManyMembers));
        // Keys of 256 characters, with or without `@`, are valid; 257 are not.
        for key in [
            "z".repeat(256),
            format!("{}@{}", "t".repeat(241), "v".repeat(14)),
            format!("{}@v", "t".repeat(242)),
            format!("t@{}", "v".repeat(15)),
        ] {
            let s = state(&["foo=1", &format!("{key}=1")]).unwrap();
            assert_eq!((s.get("foo"), s.get(&key)), (Some("1"), Some("1")), "{key}");
        }
        assert_eq!(
            state(&["foo=1", &format!("{}=1", "z".repeat(257))]),
            Err(E::TraceStateMember)
        );
        assert_eq!(state(&[&format!("k={}", "v".repeat(257))]), Err(E::TraceStateMember));
    }

    #[test]
    fn i45_2_duplicates_and_truncation_are_counted() {
        let before = MEMBERS_DROPPED.load(Ordering::Relaxed);
        state(&["a=1,a=2,b=1", "b=2"]).unwrap();
        // The counter is process-wide and other tests parse too: at least our 2.
        assert!(MEMBERS_DROPPED.load(Ordering::Relaxed) - before >= 2);
    }

    #[test]
    fn a_tracestate_over_512_characters_drops_long_members_first_then_from_the_end() {
        let long = format!("long={}", "x".repeat(200));
        let short: Vec<String> = (0..30).map(|i| format!("k{i:02}={}", "v".repeat(10))).collect();
        // 30 short members of 14 characters: 30 * 14 + 29 commas = 449; with the long one, 655.
        let mut values = vec![long.as_str()];
        values.extend(short.iter().map(String::as_str));
        let fitted = state(&values).unwrap();
        assert_eq!(fitted.get("long"), None, "the member over 128 characters goes first");
        assert_eq!(fitted.len(), 30);
        assert_eq!(fitted.as_str().len(), 449);
        // Only short members, 40 characters each: 12 fit (12 * 40 + 11 = 491; 13 make 532).
        let wide: Vec<String> = (0..20).map(|i| format!("k{i:02}={}", "v".repeat(36))).collect();
        let fitted = state(&wide.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        assert_eq!(fitted.len(), 12);
        assert_eq!(fitted.as_str().len(), 491);
        assert_eq!(fitted.members().last().unwrap().0, "k11", "members go from the end");
    }

    #[test]
    fn i45_2_with_puts_the_own_entry_first_and_replaces_its_key() {
        let s: TraceState = "a=1,b=2,c=3".parse().unwrap();
        assert_eq!(s.with("c", "9").unwrap().as_str(), "c=9,a=1,b=2");
        assert_eq!(s.with("d", "4").unwrap().as_str(), "d=4,a=1,b=2,c=3");
        assert_eq!(s.with("d", ""), Err(TraceContextError::TraceStateMember));
        let full = state(&[&(0..32).map(|i| format!("k{i}=1")).collect::<Vec<_>>().join(",")]).unwrap();
        let added = full.with("new", "1").unwrap();
        assert_eq!((added.len(), added.get("new"), added.get("k31")), (32, Some("1"), None));
        assert_eq!(TraceState::new().with("a", "1").unwrap().to_string(), "a=1");
        assert_eq!(s.without("b").as_str(), "a=1,c=3");
    }
}
