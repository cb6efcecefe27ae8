//! [`Baggage`]: W3C Baggage (<https://www.w3.org/TR/baggage/>), user-defined key-values that
//! travel with a request across services, beside the trace context.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};

/// The name of the `baggage` header.
pub const BAGGAGE: &str = "baggage";

/// Members dropped while parsing (invalid, or beyond the limits), process-wide.
pub(crate) static MEMBERS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Characters percent-encoded in a value: everything that is not a `baggage-octet` (controls,
/// space, `"`, `,`, `;`, `\`), `%` itself, and every non-ASCII byte (the UTF-8 of the value).
const VALUE_ENCODE: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b',').add(b';').add(b'\\').add(b'%');

/// One member of a [`Baggage`]: a key, its value (decoded) and its properties.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BaggageMember {
    key: String,
    value: String,
    /// The properties as they came (`;`-separated, whitespace removed), without the first `;`;
    /// empty when none.
    properties: String,
}

impl BaggageMember {
    /// The key (an RFC 7230 token).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value, percent-decoded (invalid UTF-8 sequences replaced by U+FFFD, as the
    /// specification says).
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The member's properties in their wire form (`prop1;prop2=value`), opaque to notify and
    /// passed on as received; empty when none.
    pub fn properties(&self) -> &str {
        &self.properties
    }

    /// The length of the member as formatted (`key=encoded value;properties`).
    fn wire_len(&self) -> usize {
        let value: usize = utf8_percent_encode(&self.value, VALUE_ENCODE).map(str::len).sum();
        self.key.len()
            + 1
            + value
            + if self.properties.is_empty() {
                0
            } else {
                1 + self.properties.len()
            }
    }
}

impl fmt::Display for BaggageMember {
    /// `key=value` with the value percent-encoded, then `;properties` when there are any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, utf8_percent_encode(&self.value, VALUE_ENCODE))?;
        if !self.properties.is_empty() {
            write!(f, ";{}", self.properties)?;
        }
        Ok(())
    }
}

/// Why a baggage member was not accepted ([`Baggage::with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaggageError {
    /// The key is not an RFC 7230 token (letters, digits and ``!#$%&'*+-.^_`|~``, at least one).
    Key,
    /// The properties are not `;`-separated `key` or `key=value` with token keys and
    /// baggage-octet values.
    Properties,
    /// The baggage would have more than [`Baggage::MAX_MEMBERS`] members or be longer than
    /// [`Baggage::MAX_LEN`] bytes as formatted.
    TooLarge,
}

impl fmt::Display for BaggageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BaggageError::Key => "baggage key is not an RFC 7230 token",
            BaggageError::Properties => "baggage properties are not key or key=value separated by ';'",
            BaggageError::TooLarge => "baggage would exceed 64 members or 8192 bytes",
        })
    }
}

impl std::error::Error for BaggageError {}

/// W3C Baggage: an ordered list of key-values (and their properties) that a request carries
/// across services in the `baggage` header: a tenant, a feature flag, a synthetic-test marker.
/// Immutable and shared: a clone is a reference-count increment (none when empty).
///
/// * **Parsing** ([`Baggage::from_values`], [`FromStr`]) never fails: the header values are one
///   list in order; optional whitespace around members, `=` and `;` is ignored; values are
///   percent-decoded (invalid UTF-8 becomes U+FFFD); properties are kept in their wire form. An
///   invalid member (a key that is not a token, a value with a character outside
///   `baggage-octet`, no `=`) is dropped alone; a repeated key replaces the earlier value in
///   place. Members beyond the limits are dropped from the end. Every dropped member is counted
///   ([`ExtractStats::baggage_members_dropped`](crate::trace_context::ExtractStats::baggage_members_dropped)).
/// * **Limits**: the specification asks every platform to propagate at least
///   [`Baggage::MAX_MEMBERS`] (64) members and [`Baggage::MAX_LEN`] (8,192) bytes; notify
///   propagates exactly that, whole members only.
/// * **Formatting** ([`Display`](fmt::Display)): `key=value` members joined by `,`, values
///   percent-encoded (every character outside `baggage-octet`, `%`, and non-ASCII).
/// * **Privacy**: baggage is never copied into logs, spans, the live page or event payloads by
///   notify; notify-http's server layer records the keys a user names (and the redaction policy
///   applies to them). An event carries the baggage current where it finished
///   ([`Event::baggage`](crate::Event::baggage)) only so that exporters that propagate
///   (notify-nats) can send it on to the services downstream, as notify-http's client layer does
///   for a call.
///
/// ```
/// use notify_core::baggage::Baggage;
/// let baggage: Baggage = "userId=alice, serverNode=DF%2028 ,isProduction=false;ttl=60".parse().unwrap();
/// assert_eq!(baggage.get("serverNode"), Some("DF 28"));
/// assert_eq!(baggage.member("isProduction").unwrap().properties(), "ttl=60");
/// let more = baggage.with("tenant", "ACME, Inc.")?;
/// assert_eq!(more.to_string(), "userId=alice,serverNode=DF%2028,isProduction=false;ttl=60,tenant=ACME%2C%20Inc.");
/// # Ok::<(), notify_core::baggage::BaggageError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Baggage {
    members: Option<Arc<[BaggageMember]>>,
}

impl Baggage {
    /// The most members propagated.
    pub const MAX_MEMBERS: usize = 64;
    /// The most bytes propagated (the formatted header value).
    pub const MAX_LEN: usize = 8192;

    /// No baggage.
    pub const fn new() -> Baggage {
        Baggage { members: None }
    }

    /// The baggage of one or more `baggage` header values, in order. Never fails: what is
    /// invalid or beyond the limits is dropped and counted (see the type's documentation).
    ///
    /// ```
    /// use notify_core::baggage::Baggage;
    /// let b = Baggage::from_values(["a=1,bad key=2", "a=3, c=%E2%82%AC"]);
    /// assert_eq!(b.to_string(), "a=3,c=%E2%82%AC");
    /// assert_eq!(b.get("c"), Some("€"));
    /// ```
    pub fn from_values<'a>(values: impl IntoIterator<Item = &'a str>) -> Baggage {
        let mut members: Vec<BaggageMember> = Vec::new();
        let mut dropped = 0_u64;
        for value in values {
            for text in value.split(',') {
                let text = trim_ows(text);
                if text.is_empty() {
                    continue;
                }
                match parse_member(text) {
                    // Beyond 64 keys, a new key is dropped now rather than by `fit` below: the
                    // same outcome, and the list searched by `put` stays short (a 100 KB header
                    // of distinct keys took 0.8 s quadratically).
                    Some(member)
                        if members.len() >= Baggage::MAX_MEMBERS && members.iter().all(|m| m.key != member.key) =>
                    {
                        dropped += 1
                    }
                    Some(member) => put(&mut members, member),
                    None => dropped += 1,
                }
            }
        }
        dropped += fit(&mut members);
        if dropped > 0 {
            MEMBERS_DROPPED.fetch_add(dropped, Ordering::Relaxed);
        }
        Baggage::of(members)
    }

    fn of(members: Vec<BaggageMember>) -> Baggage {
        Baggage {
            members: (!members.is_empty()).then(|| members.into()),
        }
    }

    /// The members, in order.
    pub fn iter(&self) -> impl Iterator<Item = &BaggageMember> {
        self.members.as_deref().unwrap_or_default().iter()
    }

    /// The member of `key`.
    pub fn member(&self, key: &str) -> Option<&BaggageMember> {
        self.iter().find(|m| m.key == key)
    }

    /// The (decoded) value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.member(key).map(BaggageMember::value)
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.as_deref().map_or(0, <[_]>::len)
    }

    /// True when there is no member (then no `baggage` header is sent).
    pub fn is_empty(&self) -> bool {
        self.members.is_none()
    }

    /// This baggage with `key` set to `value` (any text: it is percent-encoded when sent),
    /// without properties; an existing member of `key` is replaced in place.
    ///
    /// # Errors
    ///
    /// [`BaggageError::Key`] when `key` is not a token; [`BaggageError::TooLarge`] when the
    /// result would exceed the limits.
    pub fn with(&self, key: &str, value: &str) -> Result<Baggage, BaggageError> {
        self.with_properties(key, value, "")
    }

    /// [`Baggage::with`] and the member's `properties` in wire form (`"ttl=60;secret"`; `""` for
    /// none).
    ///
    /// # Errors
    ///
    /// As [`Baggage::with`], and [`BaggageError::Properties`] when `properties` is not valid.
    pub fn with_properties(&self, key: &str, value: &str, properties: &str) -> Result<Baggage, BaggageError> {
        if !is_token(key) {
            return Err(BaggageError::Key);
        }
        let properties = if properties.is_empty() {
            String::new()
        } else {
            parse_properties(properties).ok_or(BaggageError::Properties)?
        };
        let mut members: Vec<BaggageMember> = self.iter().cloned().collect();
        put(
            &mut members,
            BaggageMember {
                key: key.to_owned(),
                value: value.to_owned(),
                properties,
            },
        );
        if members.len() > Baggage::MAX_MEMBERS || wire_len(&members) > Baggage::MAX_LEN {
            return Err(BaggageError::TooLarge);
        }
        Ok(Baggage::of(members))
    }

    /// This baggage without the member of `key`.
    #[must_use]
    pub fn without(&self, key: &str) -> Baggage {
        Baggage::of(self.iter().filter(|m| m.key != key).cloned().collect())
    }
}

impl fmt::Display for Baggage {
    /// The header value: the members joined by `,`, values percent-encoded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, member) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            fmt::Display::fmt(member, f)?;
        }
        Ok(())
    }
}

impl FromStr for Baggage {
    type Err = std::convert::Infallible;

    /// [`Baggage::from_values`] of one header value.
    fn from_str(text: &str) -> Result<Baggage, Self::Err> {
        Ok(Baggage::from_values([text]))
    }
}

/// Adds `member`, replacing the value of an existing member of its key in place.
fn put(members: &mut Vec<BaggageMember>, member: BaggageMember) {
    match members.iter_mut().find(|m| m.key == member.key) {
        Some(existing) => *existing = member,
        None => members.push(member),
    }
}

/// The formatted length of `members` joined by `,`.
fn wire_len(members: &[BaggageMember]) -> usize {
    members.iter().map(BaggageMember::wire_len).sum::<usize>() + members.len().saturating_sub(1)
}

/// Drops members from the end until the limits hold; the number dropped.
fn fit(members: &mut Vec<BaggageMember>) -> u64 {
    let mut dropped = 0;
    if members.len() > Baggage::MAX_MEMBERS {
        dropped += (members.len() - Baggage::MAX_MEMBERS) as u64;
        members.truncate(Baggage::MAX_MEMBERS);
    }
    let mut len = wire_len(members);
    while len > Baggage::MAX_LEN {
        let Some(last) = members.pop() else { break };
        len -= last.wire_len() + usize::from(!members.is_empty());
        dropped += 1;
    }
    dropped
}

/// Spaces and tabs around `text` removed.
fn trim_ows(text: &str) -> &str {
    text.trim_matches(|c| c == ' ' || c == '\t')
}

/// RFC 7230 `token`: one or more `tchar`.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// `baggage-octet`: `%x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E`.
fn is_baggage_octets(text: &str) -> bool {
    text.bytes()
        .all(|c| matches!(c, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e))
}

/// `key OWS "=" OWS value *( OWS ";" OWS property )`, trimmed already.
fn parse_member(text: &str) -> Option<BaggageMember> {
    let (pair, properties) = match text.split_once(';') {
        Some((pair, properties)) => (pair, parse_properties(properties)?),
        None => (text, String::new()),
    };
    let (key, value) = pair.split_once('=')?;
    let (key, value) = (trim_ows(key), trim_ows(value));
    if !is_token(key) || !is_baggage_octets(value) {
        return None;
    }
    Some(BaggageMember {
        key: key.to_owned(),
        value: percent_decode_str(value).decode_utf8_lossy().into_owned(),
        properties,
    })
}

/// Properties (`property *( OWS ";" OWS property )`, `property = key OWS "=" OWS value / key OWS`)
/// in wire form without whitespace; `None` when one is invalid.
fn parse_properties(text: &str) -> Option<String> {
    let mut out = String::new();
    for property in text.split(';') {
        let property = trim_ows(property);
        let valid = match property.split_once('=') {
            Some((key, value)) => is_token(trim_ows(key)) && is_baggage_octets(trim_ows(value)),
            None => is_token(property),
        };
        if !valid {
            return None;
        }
        if !out.is_empty() {
            out.push(';');
        }
        match property.split_once('=') {
            Some((key, value)) => {
                out.push_str(trim_ows(key));
                out.push('=');
                out.push_str(trim_ows(value));
            }
            None => out.push_str(property),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Baggage {
        Baggage::from_values(values.iter().copied())
    }

    /// The examples and rules of the W3C Baggage recommendation, each with its exact outcome.
    #[test]
    fn i45_3_baggage_parsing_follows_the_recommendation() {
        // Its example header, whitespace and all.
        let b = parse(&["key1 = value1, key2 = value2;property1;property2, key3 = value3; propertyKey=propertyValue"]);
        assert_eq!(
            b.to_string(),
            "key1=value1,key2=value2;property1;property2,key3=value3;propertyKey=propertyValue"
        );
        assert_eq!(b.member("key2").unwrap().properties(), "property1;property2");
        // Percent-decoding: a value with an encoded space, comma, semicolon and UTF-8.
        let b = parse(&["userId=Am%C3%A9lie,serverNode=DF%2028,list=a%2Cb%3Bc"]);
        assert_eq!(
            (b.get("userId"), b.get("serverNode"), b.get("list")),
            (Some("Amélie"), Some("DF 28"), Some("a,b;c"))
        );
        assert_eq!(b.to_string(), "userId=Am%C3%A9lie,serverNode=DF%2028,list=a%2Cb%3Bc");
        // Invalid UTF-8 after decoding becomes U+FFFD.
        assert_eq!(parse(&["k=%FF"]).get("k"), Some("\u{fffd}"));
        // An empty value is a value.
        assert_eq!(parse(&["k="]).get("k"), Some(""));
        // Several header fields are one list; a repeated key replaces in place.
        assert_eq!(parse(&["a=1,b=2", "a=3"]).to_string(), "a=3,b=2");
        // Invalid members are dropped alone.
        let before = MEMBERS_DROPPED.load(Ordering::Relaxed);
        let b = parse(&["ok=1,no equals,bad key=2,q=\"x\",back=a\\b,(k)=1,p=1;bad prop=2,ok2=2"]);
        assert_eq!(b.to_string(), "ok=1,ok2=2");
        assert!(MEMBERS_DROPPED.load(Ordering::Relaxed) - before >= 6);
        assert!(parse(&["", " , ,"]).is_empty());
    }

    #[test]
    fn i45_3_limits_64_members_and_8192_bytes_are_propagated_whole() {
        let sixty_four: Vec<String> = (0..64).map(|i| format!("k{i}=v")).collect();
        assert_eq!(parse(&[&sixty_four.join(",")]).len(), 64);
        let sixty_five: Vec<String> = (0..65).map(|i| format!("k{i}=v")).collect();
        let b = parse(&[&sixty_five.join(",")]);
        assert_eq!((b.len(), b.get("k63"), b.get("k64")), (64, Some("v"), None));
        // 8,192 bytes exactly: two members of 4,095 and 4,096 bytes and a comma.
        let (a, c) = (format!("a={}", "x".repeat(4093)), format!("c={}", "y".repeat(4094)));
        let exact = parse(&[&format!("{a},{c}")]);
        assert_eq!((exact.len(), exact.to_string().len()), (2, 8192));
        let over = parse(&[&format!("{a},{c}y")]);
        assert_eq!(over.to_string(), a, "the member that does not fit is dropped whole");
        assert_eq!(
            exact.with("z", "1"),
            Err(BaggageError::TooLarge),
            "adding past the limit is an error"
        );
    }

    #[test]
    fn i45_review_a_100_kb_header_of_distinct_keys_parses_in_linear_time() {
        let mut members: Vec<String> = (0..14_000).map(|i| format!("k{i}=v")).collect();
        // A repeat of a kept key after the limit still replaces it in place.
        members.push("k1=late".to_owned());
        let header = members.join(",");
        assert!(header.len() > 100_000);
        let before = MEMBERS_DROPPED.load(Ordering::Relaxed);
        let started = std::time::Instant::now();
        let b = parse(&[&header]);
        let took = started.elapsed();
        assert_eq!(
            (b.len(), b.get("k1"), b.get("k63"), b.get("k64")),
            (64, Some("late"), Some("v"), None)
        );
        assert!(MEMBERS_DROPPED.load(Ordering::Relaxed) - before >= 14_000 - 64);
        // Quadratic, it took 0.8 s in a debug build; linear, a few milliseconds.
        assert!(took < std::time::Duration::from_millis(200), "{took:?}");
    }

    #[test]
    fn i45_3_with_encodes_values_and_checks_keys_and_properties() {
        let b = Baggage::new().with("tenant", "a b,c;d\\e%f\"g€").unwrap();
        assert_eq!(b.to_string(), "tenant=a%20b%2Cc%3Bd%5Ce%25f%22g%E2%82%AC");
        assert_eq!(parse(&[&b.to_string()]), b, "it round-trips");
        assert_eq!(Baggage::new().with("bad key", "1"), Err(BaggageError::Key));
        assert_eq!(Baggage::new().with("", "1"), Err(BaggageError::Key));
        let p = Baggage::new().with_properties("k", "v", "ttl = 60; secret").unwrap();
        assert_eq!(p.to_string(), "k=v;ttl=60;secret");
        assert_eq!(
            Baggage::new().with_properties("k", "v", "a b"),
            Err(BaggageError::Properties)
        );
        assert_eq!(p.without("k"), Baggage::new());
    }
}
