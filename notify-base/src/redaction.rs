//! Redaction: a per-notifier policy that rewrites secrets in payloads (passwords, tokens, card
//! numbers) once per event, before the first subscriber of any kind sees the payload.
//!
//! A policy matches payload entries by key (exact name, glob or regex) and by value (regexes
//! searched in text values, error messages and the decimal text of numbers), and replaces each
//! matched value with a fixed marker (`"[FILTERED]"` by default) or a keyed hash
//! (HMAC-SHA-256 under a key you give, `"hmac:"` and 16 hex digits) that lets equal values be
//! correlated without revealing them. Set it with [`Notifier::set_redaction`](crate::Notifier::set_redaction).

use std::borrow::Cow;
use std::fmt;
use std::io::Write as _;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use regex::{Regex, RegexBuilder};
use sha2::Sha256;

use crate::error::{QUOTED_MESSAGE_CHARS, QUOTED_PATTERN_CHARS};
use crate::escape::Escaped;
use crate::pattern::regex_error;
use crate::payload::{Key, Payload, Value};

mod key_cache;

use key_cache::KeyCache;

/// The prefixes of OpenTelemetry's HTTP header attributes (`http.request.header.<name>`, as
/// notify-http records headers): a key with one of them is also matched by the header's name alone.
pub const HEADER_KEY_PREFIXES: [&str; 2] = ["http.request.header.", "http.response.header."];

/// The header name of an OpenTelemetry header attribute key (`"x-api-key"` for
/// `"http.request.header.x-api-key"`).
fn header_name(key: &str) -> Option<&str> {
    HEADER_KEY_PREFIXES
        .iter()
        .find_map(|prefix| key.strip_prefix(prefix))
        .filter(|name| !name.is_empty())
}

/// The marker a policy replaces matched values with unless told otherwise.
pub const FILTERED: &str = "[FILTERED]";

/// A redaction policy, built (and validated) by [`Redaction::builder`].
///
/// ```
/// use notify_core::{redaction::Redaction, Payload, Value};
/// let policy = Redaction::builder()
///     .key("password")
///     .key_glob("*_token")
///     .value_regex(r"Bearer [A-Za-z0-9._~+/-]+=*")
///     .build()?;
/// let mut payload = Payload::new()
///     .with("user", "ann")
///     .with("password", "hunter2")
///     .with("api_token", "t-123")
///     .with("header", "Bearer abc.def");
/// policy.redact(&mut payload);
/// assert_eq!(payload.get("user"), Some(&Value::from("ann")));
/// assert_eq!(payload.get("password"), Some(&Value::from("[FILTERED]")));
/// assert_eq!(payload.get("api_token"), Some(&Value::from("[FILTERED]")));
/// assert_eq!(payload.get("header"), Some(&Value::from("[FILTERED]")));
/// # Ok::<(), notify_core::redaction::RedactionError>(())
/// ```
pub struct Redaction {
    /// Exact key names (compared ASCII-case-insensitively when `case_insensitive`).
    exact: Vec<Box<str>>,
    case_insensitive: bool,
    /// The globs and key regexes, as one alternation.
    keys: Option<Regex>,
    /// The value regexes, as one alternation.
    values: Option<Regex>,
    replacement: Replacement,
    /// The key answers for keys of static text, each matched once.
    key_cache: KeyCache,
}

enum Replacement {
    Marker(Cow<'static, str>),
    /// The keyed MAC, ready to be cloned per value (the key is not kept elsewhere).
    KeyedHash(Box<Hmac<Sha256>>),
}

impl fmt::Debug for Redaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let replacement = match &self.replacement {
            Replacement::Marker(m) => format!("marker {m:?}"),
            Replacement::KeyedHash(_) => "keyed hash (HMAC-SHA-256)".to_owned(),
        };
        f.debug_struct("Redaction")
            .field("exact", &self.exact)
            .field("case_insensitive", &self.case_insensitive)
            .field("keys", &self.keys.as_ref().map(Regex::as_str))
            .field("values", &self.values.as_ref().map(Regex::as_str))
            .field("replacement", &replacement)
            .finish()
    }
}

/// A pattern of a [`RedactionBuilder`] that is not valid; building fails and nothing changes.
///
/// Its `Display` is one short line, as [`PatternError`](crate::PatternError)'s: the pattern
/// quoted escaped (control characters as `\n`, `\u{1b}`, ...) and cut after 80 characters
/// (`…[N bytes]`), the byte offset of a syntax error, and the reason without the pattern.
///
/// ```
/// let err = notify_core::redaction::Redaction::builder().key_regex("(token").build().unwrap_err();
/// assert_eq!((err.pattern.as_str(), err.position, err.reason.as_str()), ("(token", Some(0), "unclosed group"));
/// assert_eq!(err.to_string(), "invalid redaction pattern `(token` at byte 0: unclosed group");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactionError {
    /// The pattern as given to the builder.
    pub pattern: String,
    /// The byte offset in [`RedactionError::pattern`] where a regex's syntax error starts, when
    /// known (`None` for an empty pattern, a glob, or a regex over the size limits).
    pub position: Option<usize>,
    /// Why it is invalid, without the pattern (the regex parser's message, or "empty pattern").
    pub reason: String,
}

impl fmt::Display for RedactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid redaction pattern `{}`",
            Escaped::truncated(&self.pattern, QUOTED_PATTERN_CHARS)
        )?;
        if let Some(at) = self.position {
            write!(f, " at byte {at}")?;
        }
        write!(f, ": {}", Escaped::truncated(&self.reason, QUOTED_MESSAGE_CHARS))
    }
}

impl std::error::Error for RedactionError {}

/// Builds a [`Redaction`]; nothing is checked until [`RedactionBuilder::build`].
#[derive(Clone, Default)]
pub struct RedactionBuilder {
    exact: Vec<String>,
    globs: Vec<String>,
    key_regexes: Vec<String>,
    value_regexes: Vec<String>,
    case_insensitive: bool,
    marker: Option<Cow<'static, str>>,
    hash_key: Option<Vec<u8>>,
}

impl fmt::Debug for RedactionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedactionBuilder")
            .field("exact", &self.exact)
            .field("globs", &self.globs)
            .field("key_regexes", &self.key_regexes)
            .field("value_regexes", &self.value_regexes)
            .field("case_insensitive", &self.case_insensitive)
            .field("marker", &self.marker)
            .field("keyed_hash", &self.hash_key.is_some())
            .finish()
    }
}

impl RedactionBuilder {
    /// Redacts the value of the key named exactly `name`.
    ///
    /// Header keys meet redaction keys: every key matcher ([`key`](Self::key),
    /// [`key_glob`](Self::key_glob), [`key_regex`](Self::key_regex)) also matches an HTTP header
    /// recorded under OpenTelemetry's attribute name ([`HEADER_KEY_PREFIXES`]) by the header's
    /// name alone, so `key("x-api-key")` redacts `http.request.header.x-api-key` (as notify-http
    /// records the header) as well as a key `x-api-key`.
    ///
    /// ```
    /// use notify_core::{redaction::Redaction, Payload, Value};
    /// let policy = Redaction::builder().key("x-api-key").build()?;
    /// let mut payload = Payload::new().with("http.request.header.x-api-key", "k-123").with("http.request.header.accept", "*/*");
    /// assert_eq!(policy.redact(&mut payload), 1);
    /// assert_eq!(payload.get("http.request.header.x-api-key"), Some(&Value::from("[FILTERED]")));
    /// # Ok::<(), notify_core::redaction::RedactionError>(())
    /// ```
    #[must_use]
    pub fn key(mut self, name: impl Into<String>) -> Self {
        self.exact.push(name.into());
        self
    }

    /// Redacts the values of keys matching `glob` as a whole: `*` is any run of characters, `?`
    /// one character, everything else itself (`"*_token"`, `"pass*"`).
    #[must_use]
    pub fn key_glob(mut self, glob: impl Into<String>) -> Self {
        self.globs.push(glob.into());
        self
    }

    /// Redacts the values of keys in which `regex` finds a match (anchor it with `^…$` to match
    /// whole keys). Regex syntax of the `regex` crate.
    #[must_use]
    pub fn key_regex(mut self, regex: impl Into<String>) -> Self {
        self.key_regexes.push(regex.into());
        self
    }

    /// Redacts any value, under any key, in which `regex` finds a match: in text values, error
    /// messages (the type name is kept) and the decimal text of numbers. The whole value is
    /// replaced, not only the match. Case-sensitive unless the regex says `(?i)`.
    #[must_use]
    pub fn value_regex(mut self, regex: impl Into<String>) -> Self {
        self.value_regexes.push(regex.into());
        self
    }

    /// Makes the key matchers (names, globs, key regexes) ignore case; exact names compare
    /// ASCII-case-insensitively. Default: case-sensitive.
    #[must_use]
    pub fn case_insensitive(mut self, yes: bool) -> Self {
        self.case_insensitive = yes;
        self
    }

    /// Replaces matched values with `marker` (default [`FILTERED`], `"[FILTERED]"`). Overrides an
    /// earlier [`keyed_hash`](Self::keyed_hash).
    #[must_use]
    pub fn marker(mut self, marker: impl Into<Cow<'static, str>>) -> Self {
        self.marker = Some(marker.into());
        self.hash_key = None;
        self
    }

    /// Replaces matched values with `"hmac:"` and the first 8 bytes, in hex, of the HMAC-SHA-256
    /// of the value's text under `key` (any length; 32 random bytes are right): equal values get
    /// equal replacements, so they can still be correlated, and without the key they cannot be
    /// guessed by hashing candidates. Overrides an earlier [`marker`](Self::marker).
    #[must_use]
    pub fn keyed_hash(mut self, key: impl AsRef<[u8]>) -> Self {
        self.hash_key = Some(key.as_ref().to_vec());
        self.marker = None;
        self
    }

    /// Checks every pattern and builds the policy.
    ///
    /// # Errors
    /// A [`RedactionError`] naming the first invalid pattern: an empty name, glob or regex, or a
    /// regex that does not parse.
    pub fn build(self) -> Result<Redaction, RedactionError> {
        let ci = self.case_insensitive;
        let mut key_parts = Vec::new();
        for glob in &self.globs {
            nonempty(glob)?;
            let part = glob_regex(glob);
            compile(glob, &part, ci)?;
            key_parts.push(part);
        }
        for regex in &self.key_regexes {
            nonempty(regex)?;
            compile(regex, regex, ci)?;
            key_parts.push(regex.clone());
        }
        let mut value_parts = Vec::new();
        for regex in &self.value_regexes {
            nonempty(regex)?;
            compile(regex, regex, false)?;
            value_parts.push(regex.clone());
        }
        for name in &self.exact {
            nonempty(name)?;
        }
        let keys = combine(&key_parts, ci)?;
        let values = combine(&value_parts, false)?;
        let replacement = match self.hash_key {
            Some(key) => Replacement::KeyedHash(Box::new(
                Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes keys of any length"),
            )),
            None => Replacement::Marker(self.marker.unwrap_or(Cow::Borrowed(FILTERED))),
        };
        Ok(Redaction {
            exact: self.exact.into_iter().map(String::into_boxed_str).collect(),
            case_insensitive: ci,
            keys,
            values,
            replacement,
            key_cache: KeyCache::new(),
        })
    }
}

fn nonempty(pattern: &str) -> Result<(), RedactionError> {
    if pattern.is_empty() {
        return Err(RedactionError {
            pattern: String::new(),
            position: None,
            reason: "empty pattern".to_owned(),
        });
    }
    Ok(())
}

fn compile(pattern: &str, regex: &str, ci: bool) -> Result<Regex, RedactionError> {
    RegexBuilder::new(regex).case_insensitive(ci).build().map_err(|e| {
        // The regex crate's own message quotes the whole pattern; keep it short.
        let error = regex_error(regex, &e);
        RedactionError {
            pattern: pattern.to_owned(),
            // An offset into the pattern as given (not into a glob's translation).
            position: error.position().filter(|_| pattern == regex),
            reason: error.message().to_owned(),
        }
    })
}

/// One regex for all `parts` (each already compiled alone, so only size limits can fail here).
fn combine(parts: &[String], ci: bool) -> Result<Option<Regex>, RedactionError> {
    if parts.is_empty() {
        return Ok(None);
    }
    let all = parts.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|");
    compile(&all, &all, ci).map(Some)
}

/// `glob` as an anchored regex.
fn glob_regex(glob: &str) -> String {
    let mut out = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out.push('$');
    out
}

impl Redaction {
    /// A builder of an empty policy (redacts nothing until given patterns).
    pub fn builder() -> RedactionBuilder {
        RedactionBuilder::default()
    }

    /// Redacts `payload` in place, nested lists and maps included: a value whose key matches is
    /// replaced whole (whatever it is, a list or map too); key patterns also apply to the keys of
    /// nested maps at any depth, and value patterns to every text, error message and number
    /// inside lists and maps. Keys, order and the shape of nested values are kept. Returns the
    /// number of values replaced (nested ones included). Notifiers call this themselves; it is
    /// public for payloads that travel outside events.
    ///
    /// ```
    /// use notify_core::{redaction::Redaction, Payload, Value};
    /// let policy = Redaction::builder().key("password").value_regex(r"^tok-").build()?;
    /// let mut payload = Payload::new()
    ///     .with("user", Payload::new().with("name", "ann").with("password", "hunter2"))
    ///     .with("tokens", vec!["tok-1", "public"]);
    /// assert_eq!(policy.redact(&mut payload), 2);
    /// assert_eq!(payload.get("user").and_then(|u| u.as_map()).and_then(|u| u.get("password")),
    ///     Some(&Value::from("[FILTERED]")));
    /// assert_eq!(payload.get("tokens"), Some(&Value::from(vec!["[FILTERED]", "public"])));
    /// # Ok::<(), notify_core::redaction::RedactionError>(())
    /// ```
    pub fn redact(&self, payload: &mut Payload) -> usize {
        self.redact_map(payload, None)
    }

    /// True when a value under `key` is redacted whatever it is.
    pub fn matches_key(&self, key: &str) -> bool {
        self.match_key_patterns(key)
    }

    /// [`Redaction::matches_key`] for a payload key: a key of static text is matched against the
    /// patterns once, then its answer is remembered (see `key_cache`).
    #[inline]
    fn matches(&self, key: &Key) -> bool {
        match key.as_static() {
            Some(key) => self.key_cache.get_or_match(key, |key| self.match_key_patterns(key)),
            None => self.match_key_patterns(key),
        }
    }

    fn match_key_patterns(&self, key: &str) -> bool {
        self.match_key_text(key) || header_name(key).is_some_and(|name| self.match_key_text(name))
    }

    fn match_key_text(&self, key: &str) -> bool {
        let exact = if self.case_insensitive {
            self.exact.iter().any(|e| e.eq_ignore_ascii_case(key))
        } else {
            self.exact.iter().any(|e| **e == *key)
        };
        exact || self.keys.as_ref().is_some_and(|r| r.is_match(key))
    }

    /// Redacts the entries of `map`; `previous` is what an earlier pass left in the same map,
    /// whose unchanged values are not redacted again (see [`Redaction::redact_entry`]).
    fn redact_map(&self, map: &mut Payload, previous: Option<&Payload>) -> usize {
        let mut replaced = 0;
        for (key, value) in map.entries_mut().iter_mut() {
            let before = previous.and_then(|p| p.get(key));
            replaced += self.redact_entry(key, value, before);
        }
        replaced
    }

    /// Redacts the value of one entry, nested values included; returns how many values it
    /// replaced. `previous` is the entry's value as an earlier pass left it, if any: a value
    /// equal to what that pass left at the same place is skipped, so a keyed hash (or a marker a
    /// value pattern matches) is never redacted twice, while anything the body changed is.
    fn redact_entry(&self, key: &Key, value: &mut Value, previous: Option<&Value>) -> usize {
        if previous == Some(value) {
            return 0;
        }
        if self.matches(key) {
            *value = Value::Str(self.replacement(&value_text(value)).into());
            return 1;
        }
        if self.values.is_none() && !matches!(value, Value::Map(_) | Value::List(_)) {
            // No value patterns: only maps (also inside lists) hold keys left to match.
            return 0;
        }
        self.redact_value(value, previous)
    }

    /// Redacts a value that is not under a matched key: value patterns on scalars, recursion into
    /// lists (value patterns on the items) and maps (key and value patterns on the entries).
    fn redact_value(&self, value: &mut Value, previous: Option<&Value>) -> usize {
        if previous == Some(value) {
            return 0;
        }
        match value {
            Value::Map(map) => {
                let previous = previous.and_then(Value::as_map);
                return self.redact_map(map, previous);
            }
            Value::List(items) => {
                let previous = previous.and_then(Value::as_list);
                return items
                    .iter_mut()
                    .enumerate()
                    .map(|(i, item)| self.redact_value(item, previous.and_then(|p| p.get(i))))
                    .sum();
            }
            _ => {}
        }
        let Some(values) = &self.values else {
            return 0;
        };
        match value {
            Value::Str(s) if values.is_match(s) => {
                *value = Value::Str(self.replacement(s).into());
                return 1;
            }
            Value::Exception { message, .. } if values.is_match(message) => {
                *message = self.replacement(message).into_owned();
                return 1;
            }
            Value::I64(_) | Value::U64(_) | Value::I128(_) | Value::U128(_) | Value::F64(_) => {
                let mut buf = [0_u8; 64];
                let mut cursor = std::io::Cursor::new(&mut buf[..]);
                // A long float (1e300 has 301 digits) does not fit: its text is allocated.
                let long;
                let text = if write!(cursor, "{value}").is_ok() {
                    let len = cursor.position() as usize;
                    std::str::from_utf8(&buf[..len]).unwrap_or_default()
                } else {
                    long = value.to_string();
                    &long
                };
                if values.is_match(text) {
                    *value = Value::Str(self.replacement(text).into());
                    return 1;
                }
            }
            // Null, booleans, durations and times carry no text a secret could hide in.
            _ => {}
        }
        0
    }

    fn replacement(&self, text: &str) -> Cow<'static, str> {
        match &self.replacement {
            Replacement::Marker(m) => m.clone(),
            Replacement::KeyedHash(mac) => {
                let mut mac = (**mac).clone();
                mac.update(text.as_bytes());
                let digest = mac.finalize().into_bytes();
                let mut out = String::with_capacity(21);
                out.push_str("hmac:");
                for b in &digest[..8] {
                    out.push_str(&format!("{b:02x}"));
                }
                Cow::Owned(out)
            }
        }
    }
}

/// The text a replacement is computed from: the string itself, an error's message, else the
/// value's `Display` text (a list or map whose key matched: its whole `Display` text).
fn value_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Str(s) => Cow::Borrowed(s),
        Value::Exception { message, .. } => Cow::Borrowed(message),
        _ => Cow::Owned(value.to_string()),
    }
}

/// The redaction state of one event in flight: the policy captured when the event was prepared
/// and the entries it already redacted (as redacted), so each value is redacted once (a keyed
/// hash is never hashed again, nested ones included) even though the payload is checked at start
/// and again at finish.
///
/// Its drop is one inline test when there is no policy: the fields are `ManuallyDrop` (their drop
/// glue was an out-of-line call of ~25 instructions per listened event) and `done` is only ever
/// filled under a policy, so without one there is nothing to release.
#[derive(Default)]
pub(crate) struct Pending {
    policy: ManuallyDrop<Option<Arc<Redaction>>>,
    /// (key, value as redacted) of the entries in which something was replaced so far; empty and
    /// unallocated while `policy` is `None`.
    done: ManuallyDrop<Vec<(Key, Value)>>,
}

impl Drop for Pending {
    #[inline(always)]
    fn drop(&mut self) {
        if self.policy.is_some() {
            self.release();
        }
    }
}

impl Pending {
    /// Inline: out of line, `instrument` called it through the GOT once per listened event (an
    /// indirect call for two stores).
    #[inline(always)]
    pub(crate) fn new(policy: Option<Arc<Redaction>>) -> Pending {
        Pending {
            policy: ManuallyDrop::new(policy),
            done: ManuallyDrop::new(Vec::new()),
        }
    }

    /// Drops the policy and what it replaced (taken out, so nothing is dropped twice).
    #[inline(never)]
    fn release(&mut self) {
        drop(std::mem::take(&mut *self.policy));
        drop(std::mem::take(&mut *self.done));
    }

    /// Redacts the entries not redacted yet (or changed since): before the `start` calls when
    /// some listener has one, and again at finish for what the body added or replaced.
    #[inline(always)]
    pub(crate) fn apply(&mut self, payload: &mut Payload) {
        if self.policy.is_some() {
            self.apply_policy(payload);
        }
    }

    #[inline(never)]
    fn apply_policy(&mut self, payload: &mut Payload) {
        let Some(policy) = &*self.policy else {
            return;
        };
        for (key, value) in payload.entries_mut().iter_mut() {
            let done = self.done.iter().position(|(k, _)| k == key);
            let previous = done.map(|at| &self.done[at].1);
            if policy.redact_entry(key, value, previous) > 0 {
                match done {
                    Some(at) => self.done[at].1 = value.clone(),
                    None => self.done.push((key.clone(), value.clone())),
                }
            }
        }
    }
}
