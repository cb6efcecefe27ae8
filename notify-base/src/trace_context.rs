//! W3C trace context (<https://www.w3.org/TR/trace-context/>): the one format for a context that
//! leaves the process.
//!
//! * [`TraceParent`]: the `traceparent` header, `00-{trace id}-{parent id}-{trace flags}`:
//!   [`TraceId`], the sender's event id as the parent id ([`EventId`]: event ids are span ids),
//!   and [`TraceFlags`] (the *sampled* bit). Parsed and formatted as the specification says
//!   (lowercase hex only; version `ff` and all-zero ids invalid; a future version is read by its
//!   first four fields).
//! * [`TraceState`]: the `tracestate` header, carried opaque and bounded (32 members, 512
//!   characters), Level 2's key grammar.
//! * [`Baggage`] (W3C Baggage, the `baggage` header) and
//!   [`Propagated`], which carries the trace flags, `tracestate` and baggage of a request beside
//!   its `Context`: `extract_propagated` and `inject_propagated` (feature `http`) read and
//!   write all three headers, as notify-http's layers do.
//! * [`Context::from_traceparent`] makes the context of an incoming request: its parent is
//!   *remote* ([`Event::parent_is_remote`](crate::Event::parent_is_remote)) and its sampled flag is
//!   the trace's sampling decision; [`Context::traceparent`] formats the outgoing header.
//! * [`extract_values`] (and, with feature `http`, `extract` and `inject` on an
//!   `http::HeaderMap`): what a server or an importer calls. Malformed headers never become an
//!   error the request sees: they start a new root trace and are counted ([`stats`]).
//!
//! ```
//! use notify_core::trace_context::{self, TraceParent};
//! use notify_core::{Context, Event, Notifier, Payload, Subscriber};
//!
//! let notifier = Notifier::new();
//! notifier.subscribe("request.http", Subscriber::event(|e: &Event| {
//!     assert!(e.parent_is_remote());
//!     assert_eq!(e.parent_id().unwrap().get(), 0x00f0_67aa_0ba9_02b7);
//! }));
//! let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
//! let (context, _state) = trace_context::extract_values([incoming], []);
//! let outgoing = context.in_scope(|| {
//!     notifier.instrument("request.http", Payload::new, |_| Context::current().traceparent())
//! });
//! let outgoing = outgoing.unwrap();
//! assert_eq!(outgoing.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
//! assert_ne!(outgoing.parent_id().get(), 0x00f0_67aa_0ba9_02b7, "our event is the new parent");
//! assert!(outgoing.flags().is_sampled());
//! ```

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::baggage::Baggage;
use crate::context::Context;
use crate::event_id::EventId;
use crate::propagated::Propagated;
use crate::thread_counter::ThreadCounts;
use crate::trace_id::TraceId;

pub use crate::baggage::BAGGAGE;
pub use crate::trace_error::TraceContextError;
pub use crate::trace_flags::TraceFlags;
pub use crate::tracestate::TraceState;

/// The name of the `traceparent` header (lowercase, as HTTP/2 requires; HTTP matches names
/// case-insensitively).
pub const TRACEPARENT: &str = "traceparent";

/// The name of the `tracestate` header.
pub const TRACESTATE: &str = "tracestate";

/// The name of Level 2's `traceresponse` response header (same format as `traceparent`: the
/// trace id, the server's span id and the trace flags).
pub const TRACERESPONSE: &str = "traceresponse";

/// A W3C `traceparent`: the trace id, the parent id (the sender's span: for notify, the event id
/// of the event that made the call) and the trace flags. Always formatted as version `00`
/// (`00-{32 hex}-{16 hex}-{2 hex}`, 55 bytes, lowercase).
///
/// Parsing ([`FromStr`]) follows the specification and its test suite: optional spaces and tabs
/// around the value are ignored; every field is lowercase hex of its exact length; version `ff`
/// is invalid; an all-zero trace id or parent id is invalid; version `00` has nothing after the
/// flags; a higher (future) version is read by its first four fields, anything after them must
/// start with `-`, and only its sampled and random flags are kept.
///
/// ```
/// use notify_core::trace_context::{TraceContextError, TraceParent};
/// let header: TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse()?;
/// assert_eq!(header.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
/// assert_eq!(header.parent_id().get(), 0xb7ad_6b71_6920_3331);
/// assert!(header.flags().is_sampled());
/// assert_eq!(header.to_string(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
///
/// let future: TraceParent = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more".parse()?;
/// assert_eq!(future.to_string(), header.to_string());
/// assert_eq!(
///     "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse::<TraceParent>(),
///     Err(TraceContextError::InvalidVersion)
/// );
/// # Ok::<(), TraceContextError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: TraceId,
    parent_id: EventId,
    flags: TraceFlags,
}

impl TraceParent {
    /// The `traceparent` of these ids and flags; `None` when `parent_id` is 0 (W3C forbids the
    /// all-zero parent id; a [`TraceId`] is never zero).
    pub const fn new(trace_id: TraceId, parent_id: EventId, flags: TraceFlags) -> Option<TraceParent> {
        if parent_id.get() == 0 {
            None
        } else {
            Some(TraceParent {
                trace_id,
                parent_id,
                flags,
            })
        }
    }

    /// The trace id.
    pub const fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The parent id: the span (event) of the sender that made the call; never 0.
    pub const fn parent_id(&self) -> EventId {
        self.parent_id
    }

    /// The trace flags.
    pub const fn flags(&self) -> TraceFlags {
        self.flags
    }

    /// The header value's 55 bytes, `00-{trace id: 32 hex}-{parent id: 16 hex}-{flags: 2 hex}`,
    /// lowercase, as [`Display`](fmt::Display) writes them: formatted in place, without an
    /// allocation or `fmt`'s machinery (what `inject` puts in each outgoing request).
    ///
    /// ```
    /// use notify_core::trace_context::TraceParent;
    /// let header: TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03".parse()?;
    /// assert_eq!(&header.to_bytes()[..], b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03");
    /// # Ok::<(), notify_core::trace_context::TraceContextError>(())
    /// ```
    pub fn to_bytes(&self) -> [u8; 55] {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        let trace = self.trace_id.get();
        put_hex(&mut out[3..19], (trace >> 64) as u64);
        put_hex(&mut out[19..35], trace as u64);
        put_hex(&mut out[36..52], self.parent_id.get());
        put_hex(&mut out[53..55], u64::from(self.flags.bits()));
        out
    }
}

/// Writes the low `out.len()` (even, at most 16) hex digits of `value` into `out`, lowercase,
/// most significant first, two digits per table look-up.
fn put_hex(out: &mut [u8], value: u64) {
    for (byte, pair) in out.chunks_exact_mut(2).rev().enumerate() {
        pair.copy_from_slice(&HEX_PAIR[((value >> (8 * byte)) & 0xff) as usize]);
    }
}

impl fmt::Display for TraceParent {
    /// `00-{trace id: 32 hex}-{parent id: 16 hex}-{flags: 2 hex}`, lowercase.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.to_bytes();
        // Hex digits and dashes: ASCII, so always UTF-8.
        f.write_str(std::str::from_utf8(&bytes).map_err(|_| fmt::Error)?)
    }
}

/// Spaces and tabs (HTTP's optional whitespace) around `text` removed.
fn trim_ows(text: &[u8]) -> &[u8] {
    let ows = |c: &u8| *c == b' ' || *c == b'\t';
    let start = text.iter().position(|c| !ows(c)).unwrap_or(text.len());
    let end = text.iter().rposition(|c| !ows(c)).map_or(start, |last| last + 1);
    &text[start..end]
}

/// Each byte's value as a lowercase hex digit, `0xff` for bytes that are not one.
const HEX_VALUE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Each byte's two lowercase hex digits.
const HEX_PAIR: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [DIGITS[i >> 4], DIGITS[i & 0xf]];
        i += 1;
    }
    table
};

/// The value of lowercase hex `digits`, `None` when one is not `0-9a-f` (or there are more than
/// 32). Up to 16 digits at a time in a `u64` (128-bit shifts cost several instructions each),
/// each digit a table look-up.
fn lower_hex(digits: &[u8]) -> Option<u128> {
    match digits.len() {
        0..=16 => lower_hex_u64(digits).map(u128::from),
        17..=32 => {
            let (high, low) = digits.split_at(digits.len() - 16);
            Some((u128::from(lower_hex_u64(high)?) << 64) | u128::from(lower_hex_u64(low)?))
        }
        _ => None,
    }
}

/// [`lower_hex`] of at most 16 digits.
fn lower_hex_u64(digits: &[u8]) -> Option<u64> {
    let mut value = 0_u64;
    // A digit's value fits in the low four bits; a non-digit's `0xff` sets the high four.
    let mut not_digits = 0_u8;
    for &d in digits {
        let digit = HEX_VALUE[usize::from(d)];
        not_digits |= digit;
        value = (value << 4) | u64::from(digit & 0xf);
    }
    (not_digits & 0xf0 == 0).then_some(value)
}

impl TraceParent {
    /// [`FromStr`] of the header value's bytes.
    fn parse(text: &[u8]) -> Result<TraceParent, TraceContextError> {
        let b = trim_ows(text);
        if b.len() < 2 {
            return Err(TraceContextError::TooShort);
        }
        let version = lower_hex(&b[0..2]).ok_or(TraceContextError::Version)?;
        if b.get(2) != Some(&b'-') && b.len() >= 3 {
            return Err(TraceContextError::Version);
        }
        if version == 0xff {
            return Err(TraceContextError::InvalidVersion);
        }
        if b.len() < 55 {
            return Err(TraceContextError::TooShort);
        }
        let trace = lower_hex(&b[3..35]).ok_or(TraceContextError::TraceId)?;
        if b[35] != b'-' {
            return Err(TraceContextError::Separator);
        }
        let parent = lower_hex(&b[36..52]).ok_or(TraceContextError::ParentId)? as u64;
        if b[52] != b'-' {
            return Err(TraceContextError::Separator);
        }
        let mut flags = lower_hex(&b[53..55]).ok_or(TraceContextError::Flags)? as u8;
        if b.len() > 55 && (version == 0 || b[55] != b'-') {
            return Err(TraceContextError::TrailingData);
        }
        if version != 0 {
            flags &= TraceFlags::SAMPLED.bits() | TraceFlags::RANDOM.bits();
        }
        let trace_id = TraceId::new(trace).ok_or(TraceContextError::ZeroTraceId)?;
        TraceParent::new(trace_id, EventId(parent), TraceFlags::new(flags)).ok_or(TraceContextError::ZeroParentId)
    }
}

impl FromStr for TraceParent {
    type Err = TraceContextError;

    fn from_str(text: &str) -> Result<TraceParent, TraceContextError> {
        TraceParent::parse(text.as_bytes())
    }
}

/// What `extract` (feature `http`) and [`extract_values`] did in this process since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractStats {
    /// Incoming `traceparent`s accepted: the request continued the caller's trace.
    pub continued: u64,
    /// Requests without a `traceparent`: they started a new trace.
    pub absent: u64,
    /// `traceparent`s rejected (malformed, all-zero ids, version `ff`, duplicated): the request
    /// started a new trace instead.
    pub rejected: u64,
    /// `tracestate`s discarded (invalid, or sent without a valid `traceparent`).
    pub tracestate_discarded: u64,
    /// `tracestate` members dropped from lists that were kept: repeated keys, and members
    /// removed to fit 512 characters ([`TraceState`]).
    pub tracestate_members_dropped: u64,
    /// `baggage` members dropped: invalid, or beyond 64 members or 8,192 bytes
    /// ([`Baggage`]).
    pub baggage_members_dropped: u64,
}

// Counted at every request: slots per thread (thread_counter.rs), not a shared cache line.
static EXTRACTED: ThreadCounts<2> = ThreadCounts::new();
/// [`EXTRACTED`]'s slot of [`ExtractStats::continued`].
const CONTINUED: usize = 0;
/// [`EXTRACTED`]'s slot of [`ExtractStats::absent`].
const ABSENT: usize = 1;

thread_local! {
    /// This thread's slots of [`EXTRACTED`], looked up once per thread.
    static EXTRACTED_HERE: Cell<Option<&'static [AtomicU64; 2]>> = const { Cell::new(None) };
}

/// Counts one extraction as `which` ([`CONTINUED`] or [`ABSENT`]) for this thread.
#[inline]
fn count(which: usize) {
    let slots = EXTRACTED_HERE.with(|here| {
        here.get().unwrap_or_else(|| {
            let slots = EXTRACTED.local();
            here.set(Some(slots));
            slots
        })
    });
    ThreadCounts::<2>::add_one(&slots[which]);
}
static REJECTED: AtomicU64 = AtomicU64::new(0);
static TRACESTATE_DISCARDED: AtomicU64 = AtomicU64::new(0);

/// The counts of `extract` (feature `http`) and [`extract_values`] so far in this process (every notifier, every
/// server layer, every importer).
///
/// ```
/// let before = notify_core::trace_context::stats().rejected;
/// let (context, _) = notify_core::trace_context::extract_values(["00-00000000000000000000000000000000-00f067aa0ba902b7-01"], []);
/// assert!(context.is_none(), "a new root trace");
/// assert!(notify_core::trace_context::stats().rejected > before);
/// ```
pub fn stats() -> ExtractStats {
    ExtractStats {
        continued: EXTRACTED.sum(CONTINUED),
        absent: EXTRACTED.sum(ABSENT),
        rejected: REJECTED.load(Ordering::Relaxed),
        tracestate_discarded: TRACESTATE_DISCARDED.load(Ordering::Relaxed),
        tracestate_members_dropped: crate::tracestate::MEMBERS_DROPPED.load(Ordering::Relaxed),
        baggage_members_dropped: crate::baggage::MEMBERS_DROPPED.load(Ordering::Relaxed),
    }
}

/// The context of an incoming call from its `traceparent` and `tracestate` header values (each
/// header may come several times, as HTTP and NATS headers may): [`Context::from_traceparent`]
/// of a valid single `traceparent` and its `tracestate`; otherwise [`Context::none`] (the request
/// starts a new root trace) and an empty `tracestate`. Never fails; every outcome is counted in
/// [`stats`]. A `tracestate` is kept only with a valid `traceparent`.
///
/// ```
/// use notify_core::trace_context::extract_values;
/// let (context, state) = extract_values(
///     ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"],
///     ["congo=t61rcWkgMzE"],
/// );
/// assert!(context.is_remote());
/// assert_eq!(context.is_sampled(), Some(false));
/// assert_eq!(state.get("congo"), Some("t61rcWkgMzE"));
/// let (context, state) = extract_values(["00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"], ["a=1"]);
/// assert!(context.is_none() && state.is_empty(), "uppercase hex is invalid");
/// ```
pub fn extract_values<'a>(
    traceparents: impl IntoIterator<Item = &'a str>,
    tracestates: impl IntoIterator<Item = &'a str>,
) -> (Context, TraceState) {
    let (traceparent, state) = extract_parsed(parse_one(traceparents), tracestates);
    (
        traceparent.map_or(Context::none(), |t| Context::from_traceparent(&t)),
        state,
    )
}

/// Everything an incoming call carries, from its `traceparent`, `tracestate` and `baggage`
/// header values: the context of [`extract_values`] (with Level 2's random flag,
/// [`Context::has_random_trace_id`]), and, when there is a `tracestate` or baggage, a
/// [`Propagated`] of the `traceparent`'s trace with its trace flags and `tracestate`, and the baggage
/// ([`Baggage::from_values`], read whether or not the `traceparent` is valid: W3C Baggage is
/// independent of trace context). Without a valid `traceparent` the record has no trace. Never
/// fails; every outcome is counted in [`stats`].
///
/// ```
/// use notify_core::trace_context::extract_values_propagated;
/// let (context, propagated) = extract_values_propagated(
///     ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"],
///     ["congo=t61rcWkgMzE"],
///     ["tenant=acme"],
/// );
/// assert!(context.is_remote() && context.has_random_trace_id());
/// assert!(propagated.trace_flags().is_random());
/// assert_eq!(propagated.trace_state().as_str(), "congo=t61rcWkgMzE");
/// assert_eq!(propagated.baggage().get("tenant"), Some("acme"));
/// ```
pub fn extract_values_propagated<'a>(
    traceparents: impl IntoIterator<Item = &'a str>,
    tracestates: impl IntoIterator<Item = &'a str>,
    baggages: impl IntoIterator<Item = &'a str>,
) -> (Context, Propagated) {
    let (traceparent, state) = extract_parsed(parse_one(traceparents), tracestates);
    propagated_of(traceparent, state, Baggage::from_values(baggages))
}

fn propagated_of(traceparent: Option<TraceParent>, state: TraceState, baggage: Baggage) -> (Context, Propagated) {
    match traceparent {
        // The context carries the flags; a record only when there is more to carry.
        Some(t) if state.is_empty() && baggage.is_empty() => (Context::from_traceparent(&t), Propagated::new()),
        Some(t) => (
            Context::from_traceparent(&t),
            Propagated::for_trace(t.trace_id(), t.flags(), state).with_baggage(baggage),
        ),
        None => (Context::none(), Propagated::new().with_baggage(baggage)),
    }
}

/// The one `traceparent` of `values`: `None` when absent, an error when there are two or more.
fn parse_one<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Result<TraceParent, TraceContextError>> {
    let mut values = values.into_iter();
    match (values.next(), values.next()) {
        (None, _) => None,
        (Some(one), None) => Some(one.parse::<TraceParent>()),
        (Some(_), Some(_)) => Some(Err(TraceContextError::Duplicate)),
    }
}

/// A fresh random span id (never 0), from the generator of event ids: the parent id of a call
/// made where nobody records a span (a non-recording span, as OpenTelemetry's SDK makes when its
/// sampler drops one), so each outgoing call still has its own parent id.
///
/// ```
/// let (a, b) = (notify_core::trace_context::new_span_id(), notify_core::trace_context::new_span_id());
/// assert_ne!(a, b);
/// assert_ne!(a.get(), 0);
/// ```
pub fn new_span_id() -> EventId {
    EventId(crate::ids::next_event_id())
}

/// The valid `traceparent` of an incoming call and its `tracestate`, counted (`None`: absent or
/// rejected; the `tracestate` is kept only with a valid `traceparent`).
fn extract_parsed<'a>(
    parsed: Option<Result<TraceParent, TraceContextError>>,
    tracestates: impl IntoIterator<Item = &'a str>,
) -> (Option<TraceParent>, TraceState) {
    let mut tracestates = tracestates.into_iter().peekable();
    let sent_state = tracestates.peek().is_some();
    let traceparent = match parsed {
        Some(Ok(traceparent)) => traceparent,
        absent_or_rejected => {
            if absent_or_rejected.is_none() {
                count(ABSENT);
            } else {
                REJECTED.fetch_add(1, Ordering::Relaxed);
            }
            if sent_state {
                TRACESTATE_DISCARDED.fetch_add(1, Ordering::Relaxed);
            }
            return (None, TraceState::new());
        }
    };
    count(CONTINUED);
    let state = TraceState::from_values(tracestates).unwrap_or_else(|_| {
        TRACESTATE_DISCARDED.fetch_add(1, Ordering::Relaxed);
        TraceState::new()
    });
    (Some(traceparent), state)
}

/// The context of an incoming HTTP request: [`extract_values`] of its `traceparent` and
/// `tracestate` headers, without the `tracestate`. A header value that is not text counts as
/// rejected.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
/// let context = notify_core::trace_context::extract(&headers);
/// assert!(context.is_remote());
/// assert_eq!(context.event_id().unwrap().get(), 0x00f0_67aa_0ba9_02b7);
/// ```
#[cfg(feature = "http")]
pub fn extract(headers: &http::HeaderMap) -> Context {
    extract_with_state(headers).0
}

/// [`extract`] and the request's `tracestate` (to send on with [`inject_with_state`]).
#[cfg(feature = "http")]
pub fn extract_with_state(headers: &http::HeaderMap) -> (Context, TraceState) {
    let (traceparent, state) = extract_http(headers);
    (
        traceparent.map_or(Context::none(), |t| Context::from_traceparent(&t)),
        state,
    )
}

/// Everything an incoming HTTP request carries: [`extract_values_propagated`] of its
/// `traceparent`, `tracestate` and `baggage` headers (header names match in any case). A header
/// value that is not text counts as invalid.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02".parse().unwrap());
/// headers.insert("tracestate", "rojo=00f067aa0ba902b7".parse().unwrap());
/// headers.insert("baggage", "tenant=acme".parse().unwrap());
/// let (context, propagated) = notify_core::trace_context::extract_propagated(&headers);
/// assert_eq!(context.is_sampled(), Some(false));
/// assert!(context.has_random_trace_id() && propagated.trace_flags().is_random());
/// assert_eq!(propagated.baggage().get("tenant"), Some("acme"));
/// ```
#[cfg(feature = "http")]
pub fn extract_propagated(headers: &http::HeaderMap) -> (Context, Propagated) {
    if headers.is_empty() {
        count(ABSENT);
        return (Context::none(), Propagated::new());
    }
    let (traceparent, state) = extract_http(headers);
    let baggage = match headers.get(header_name::BAGGAGE) {
        None => Baggage::new(),
        Some(_) => {
            // A value with bytes that are not ASCII (obs-text) is read lossily: the members
            // holding them are invalid and dropped alone, the others kept.
            let values: Vec<std::borrow::Cow<'_, str>> = headers
                .get_all(header_name::BAGGAGE)
                .iter()
                .map(|v| match v.to_str() {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(v.as_bytes()),
                })
                .collect();
            Baggage::from_values(values.iter().map(|v| v.as_ref()))
        }
    };
    propagated_of(traceparent, state, baggage)
}

/// Sets the `traceparent`, `tracestate` and `baggage` headers of an outgoing request:
/// `traceparent` from `context` with the trace flags of `propagated` for its trace
/// ([`Context::traceparent_with`]), `tracestate` when `propagated` has one for that trace, and
/// `baggage` when it has any; each header is removed otherwise.
///
/// ```
/// use notify_core::{context::Propagated, event::EventId, trace_context::TraceFlags, Context, TraceId};
/// let trace = TraceId::new(0x4bf9).unwrap();
/// let propagated = Propagated::for_trace(trace, TraceFlags::RANDOM, "a=1".parse().unwrap());
/// let mut headers = http::HeaderMap::new();
/// notify_core::trace_context::inject_propagated(&Context::new(trace, Some(EventId::new(0xb7ad))), &propagated, &mut headers);
/// assert_eq!(headers["traceparent"], "00-00000000000000000000000000004bf9-000000000000b7ad-03");
/// assert_eq!(headers["tracestate"], "a=1");
/// assert!(headers.get("baggage").is_none());
/// ```
#[cfg(feature = "http")]
pub fn inject_propagated(context: &Context, propagated: &Propagated, headers: &mut http::HeaderMap) {
    let traceparent = context.traceparent_with(propagated);
    let value = traceparent.map(|t| http::HeaderValue::from_bytes(&t.to_bytes()));
    set_header(headers, header_name::TRACEPARENT, value);
    let state = traceparent.and_then(|t| propagated.state_for(t.trace_id()));
    let value = state.map(|s| http::HeaderValue::from_str(s.as_str()));
    set_header(headers, header_name::TRACESTATE, value);
    let baggage = propagated.baggage();
    let value = (!baggage.is_empty()).then(|| http::HeaderValue::try_from(baggage.to_string()));
    set_header(headers, header_name::BAGGAGE, value);
}

/// The three headers' names, built without parsing (a `&str` name is parsed at every use).
#[cfg(feature = "http")]
mod header_name {
    use http::HeaderName;

    pub(super) const TRACEPARENT: HeaderName = HeaderName::from_static(super::TRACEPARENT);
    pub(super) const TRACESTATE: HeaderName = HeaderName::from_static(super::TRACESTATE);
    pub(super) const BAGGAGE: HeaderName = HeaderName::from_static(super::BAGGAGE);
}

/// Sets header `name` to `value`, or removes it for `None`. Values made here are visible ASCII
/// (formatted ids, validated tracestate, percent-encoded baggage), so the conversion succeeds;
/// were it to fail, the header is removed rather than sent wrong.
#[cfg(feature = "http")]
fn set_header(
    headers: &mut http::HeaderMap,
    name: http::HeaderName,
    value: Option<Result<http::HeaderValue, http::header::InvalidHeaderValue>>,
) {
    match value.and_then(Result::ok) {
        Some(value) => {
            headers.insert(name, value);
        }
        None => {
            headers.remove(name);
        }
    }
}

/// The `traceparent` and `tracestate` of HTTP headers, counted.
#[cfg(feature = "http")]
fn extract_http(headers: &http::HeaderMap) -> (Option<TraceParent>, TraceState) {
    let mut values = headers.get_all(header_name::TRACEPARENT).iter();
    let parsed = match (values.next(), values.next()) {
        (None, _) => None,
        // The four fields accept only hex digits and dashes (with spaces or tabs around): only
        // a longer value (a future version's data after them) needs the text check.
        (Some(one), None) if one.len() > 55 && one.to_str().is_err() => Some(Err(TraceContextError::NotText)),
        (Some(one), None) => Some(TraceParent::parse(one.as_bytes())),
        (Some(_), Some(_)) => Some(Err(TraceContextError::Duplicate)),
    };
    if parsed.is_none() && !headers.contains_key(header_name::TRACESTATE) {
        count(ABSENT);
        return (None, TraceState::new());
    }
    // A tracestate value that is not text cannot be a valid list: one invalid member is what
    // discards the whole list, so it stands in for it.
    let states: Vec<&str> = headers
        .get_all(header_name::TRACESTATE)
        .iter()
        .map(|v| v.to_str().unwrap_or("not text"))
        .collect();
    extract_parsed(parsed, states)
}

/// Sets the `traceparent` header of an outgoing request to `context`'s
/// ([`Context::traceparent`]); removes it when the context has no trace id or no event (the
/// callee then starts a trace of its own). Typical call: `inject(&Context::current(), headers)`.
///
/// ```
/// use notify_core::{event::EventId, Context, TraceId};
/// let mut headers = http::HeaderMap::new();
/// let context = Context::new(TraceId::new(0x4bf9).unwrap(), Some(EventId::new(0xb7ad)));
/// notify_core::trace_context::inject(&context, &mut headers);
/// assert_eq!(headers["traceparent"], "00-00000000000000000000000000004bf9-000000000000b7ad-01");
/// ```
#[cfg(feature = "http")]
pub fn inject(context: &Context, headers: &mut http::HeaderMap) {
    // A formatted traceparent is always visible ASCII, so the conversion never fails.
    match context
        .traceparent()
        .and_then(|t| http::HeaderValue::try_from(t.to_string()).ok())
    {
        Some(value) => {
            headers.insert(TRACEPARENT, value);
        }
        None => {
            headers.remove(TRACEPARENT);
        }
    }
}

/// [`inject`], and the `tracestate` header set to `state` when there is a `traceparent` and the
/// state is not empty (removed otherwise).
#[cfg(feature = "http")]
pub fn inject_with_state(context: &Context, state: &TraceState, headers: &mut http::HeaderMap) {
    inject(context, headers);
    if headers.contains_key(TRACEPARENT) && !state.is_empty() {
        match http::HeaderValue::try_from(state.as_str()) {
            Ok(value) => {
                headers.insert(TRACESTATE, value);
            }
            Err(_) => {
                headers.remove(TRACESTATE);
            }
        }
    } else {
        headers.remove(TRACESTATE);
    }
}

/// W3C `traceparent` for [`Context`]: continuing a caller's trace, and the header for a call.
impl Context {
    /// The context a W3C `traceparent` describes: its trace id, its parent id as a *remote*
    /// parent, its sampled flag as the trace's sampling decision ([`Context::remote`]).
    ///
    /// ```
    /// use notify_core::{trace_context::TraceParent, Context};
    /// let header: TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse()?;
    /// let context = Context::from_traceparent(&header);
    /// assert_eq!(context.trace_id().unwrap().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    /// assert_eq!(context.event_id().unwrap().get(), 0x00f0_67aa_0ba9_02b7);
    /// assert!(context.is_remote());
    /// assert_eq!(context.is_sampled(), Some(true));
    /// # Ok::<(), notify_core::trace_context::TraceContextError>(())
    /// ```
    pub fn from_traceparent(traceparent: &TraceParent) -> Context {
        Context::remote(
            traceparent.trace_id(),
            traceparent.parent_id(),
            traceparent.flags().is_sampled(),
        )
        .with_random_trace_id(traceparent.flags().is_random())
    }

    /// The W3C `traceparent` to send with a call made under this context: its trace id, its event
    /// as the parent id, the sampled flag of its trace (set when the decision is not made yet:
    /// the default sampler keeps everything) and Level 2's random flag when the context has it
    /// ([`Context::has_random_trace_id`]). `None` without a trace id or an event.
    ///
    /// ```
    /// use notify_core::{Context, Notifier, Payload};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("call.http", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// let header = notifier.instrument("call.http", Payload::new, |_| Context::current().traceparent());
    /// let text = header.unwrap().to_string();
    /// assert!(text.starts_with("00-") && text.ends_with("-01"), "{text}");
    /// assert_eq!(Context::none().traceparent(), None);
    /// ```
    pub fn traceparent(&self) -> Option<TraceParent> {
        let flags = TraceFlags::NONE
            .with_sampled(self.is_sampled() != Some(false))
            .with_random(self.has_random_trace_id());
        TraceParent::new(self.trace_id()?, self.event_id()?, flags)
    }

    /// [`Context::traceparent`] with the trace flags `propagated` holds for this context's trace
    /// (Level 2's random flag) besides the sampled flag.
    ///
    /// ```
    /// use notify_core::{context::Propagated, event::EventId, trace_context::TraceFlags, Context, TraceId};
    /// let trace = TraceId::new(9).unwrap();
    /// let context = Context::remote(trace, EventId::new(5), false);
    /// let propagated = Propagated::for_trace(trace, TraceFlags::RANDOM, Default::default());
    /// assert_eq!(context.traceparent_with(&propagated).unwrap().flags().bits(), 0x02);
    /// assert_eq!(context.traceparent_with(&Propagated::new()).unwrap().flags().bits(), 0x00);
    /// ```
    pub fn traceparent_with(&self, propagated: &Propagated) -> Option<TraceParent> {
        let traceparent = self.traceparent()?;
        let random = traceparent.flags().is_random() || propagated.flags_for(traceparent.trace_id()).is_random();
        let flags = traceparent.flags().with_random(random);
        TraceParent::new(traceparent.trace_id(), traceparent.parent_id(), flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "12345678901234567890123456789012";
    const VALID: &str = "00-12345678901234567890123456789012-1234567890123456-01";

    fn parse(text: &str) -> Result<TraceParent, TraceContextError> {
        text.parse()
    }

    /// The traceparent cases of the W3C test suite (test/test.py), each with the exact outcome.
    #[test]
    fn traceparent_cases_of_the_w3c_test_suite() {
        use TraceContextError as E;
        let ok = parse(VALID).unwrap();
        assert_eq!(ok.trace_id().to_string(), TRACE);
        assert_eq!(ok.parent_id().get(), 0x1234_5678_9012_3456);
        assert!(ok.flags().is_sampled());
        let cases: &[(&str, Result<(), E>)] = &[
            // test_traceparent_version_0x00: nothing may follow version 00's flags.
            (
                "00-12345678901234567890123456789012-1234567890123456-01.",
                Err(E::TrailingData),
            ),
            (
                "00-12345678901234567890123456789012-1234567890123456-01-what-the-future-will-be-like",
                Err(E::TrailingData),
            ),
            // test_traceparent_version_0xcc: a future version is read by its first four fields.
            ("cc-12345678901234567890123456789012-1234567890123456-01", Ok(())),
            (
                "cc-12345678901234567890123456789012-1234567890123456-01-what-the-future-will-be-like",
                Ok(()),
            ),
            (
                "cc-12345678901234567890123456789012-1234567890123456-01.what-the-future-will-be-like",
                Err(E::TrailingData),
            ),
            // test_traceparent_version_0xff
            (
                "ff-12345678901234567890123456789012-1234567890123456-01",
                Err(E::InvalidVersion),
            ),
            // test_traceparent_version_illegal_characters, _too_long, _too_short
            (
                ".0-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            (
                "0.-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            (
                "000-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            (
                "0000-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            (
                "0-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            // test_traceparent_trace_id_*
            (
                "00-00000000000000000000000000000000-1234567890123456-01",
                Err(E::ZeroTraceId),
            ),
            (
                "00-.2345678901234567890123456789012-1234567890123456-01",
                Err(E::TraceId),
            ),
            (
                "00-1234567890123456789012345678901.-1234567890123456-01",
                Err(E::TraceId),
            ),
            (
                "00-123456789012345678901234567890123-1234567890123456-01",
                Err(E::Separator),
            ),
            (
                "00-1234567890123456789012345678901-1234567890123456-01",
                Err(E::TooShort),
            ),
            // test_traceparent_parent_id_*
            (
                "00-12345678901234567890123456789012-0000000000000000-01",
                Err(E::ZeroParentId),
            ),
            (
                "00-12345678901234567890123456789012-.234567890123456-01",
                Err(E::ParentId),
            ),
            (
                "00-12345678901234567890123456789012-123456789012345.-01",
                Err(E::ParentId),
            ),
            (
                "00-12345678901234567890123456789012-12345678901234567-01",
                Err(E::Separator),
            ),
            (
                "00-12345678901234567890123456789012-123456789012345-01",
                Err(E::TooShort),
            ),
            // test_traceparent_trace_flags_*
            ("00-12345678901234567890123456789012-1234567890123456-.0", Err(E::Flags)),
            ("00-12345678901234567890123456789012-1234567890123456-0.", Err(E::Flags)),
            (
                "00-12345678901234567890123456789012-1234567890123456-001",
                Err(E::TrailingData),
            ),
            (
                "00-12345678901234567890123456789012-1234567890123456-1",
                Err(E::TooShort),
            ),
            // test_traceparent_ows_handling
            (" 00-12345678901234567890123456789012-1234567890123456-01", Ok(())),
            ("\t00-12345678901234567890123456789012-1234567890123456-01", Ok(())),
            ("00-12345678901234567890123456789012-1234567890123456-01 ", Ok(())),
            ("00-12345678901234567890123456789012-1234567890123456-01\t", Ok(())),
            ("\t 00-12345678901234567890123456789012-1234567890123456-01 \t", Ok(())),
            // Uppercase hex is not HEXDIGLC.
            (
                "00-1234567890123456789012345678901A-1234567890123456-01",
                Err(E::TraceId),
            ),
            (
                "00-12345678901234567890123456789012-123456789012345A-01",
                Err(E::ParentId),
            ),
            ("00-12345678901234567890123456789012-1234567890123456-0A", Err(E::Flags)),
            (
                "0A-12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            // Separators.
            (
                "00_12345678901234567890123456789012-1234567890123456-01",
                Err(E::Version),
            ),
            (
                "00-12345678901234567890123456789012_1234567890123456-01",
                Err(E::Separator),
            ),
            (
                "00-12345678901234567890123456789012-1234567890123456_01",
                Err(E::Separator),
            ),
            ("", Err(E::TooShort)),
            ("00", Err(E::TooShort)),
        ];
        for (text, expected) in cases {
            let got = parse(text);
            match expected {
                Ok(()) => assert_eq!(got.map(|t| t.trace_id().to_string()), Ok(TRACE.to_owned()), "{text:?}"),
                Err(e) => assert_eq!(got, Err(*e), "{text:?}"),
            }
        }
    }

    #[test]
    fn formatting_is_version_00_lowercase_and_round_trips() {
        let header = parse(VALID).unwrap();
        assert_eq!(header.to_string(), VALID);
        let unsampled = TraceParent::new(header.trace_id(), EventId(0xab), TraceFlags::NONE).unwrap();
        assert_eq!(
            unsampled.to_string(),
            "00-12345678901234567890123456789012-00000000000000ab-00"
        );
        assert_eq!(parse(&unsampled.to_string()), Ok(unsampled));
        assert_eq!(
            TraceParent::new(header.trace_id(), EventId(0), TraceFlags::SAMPLED),
            None
        );
        // Version 00 keeps unknown flags as received; a future version keeps only `sampled` and
        // `random` (the flags Level 2 defines).
        let other = parse("00-12345678901234567890123456789012-1234567890123456-07").unwrap();
        assert_eq!((other.flags().bits(), other.flags().known().bits()), (0x07, 0x03));
        let future = parse("cc-12345678901234567890123456789012-1234567890123456-07-x").unwrap();
        assert_eq!(future.flags(), TraceFlags::SAMPLED.with_random(true));
        assert!(future.flags().is_random());
        assert_eq!(
            future.to_string(),
            "00-12345678901234567890123456789012-1234567890123456-03"
        );
        let max = TraceParent::new(TraceId::new(u128::MAX).unwrap(), EventId(u64::MAX), TraceFlags::SAMPLED).unwrap();
        assert_eq!(parse(&max.to_string()), Ok(max));
    }

    #[test]
    fn i45_1_hex_by_table_formats_and_parses_as_fmt_does() {
        for (trace, parent, flags) in [
            (1_u128, 1_u64, 0_u8),
            (u128::MAX, u64::MAX, 0xff),
            (0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, 0x0f1e_2d3c_4b5a_6978, 0x03),
        ] {
            let t = TraceParent::new(TraceId::new(trace).unwrap(), EventId(parent), TraceFlags::new(flags)).unwrap();
            let expected = format!("00-{trace:032x}-{parent:016x}-{flags:02x}");
            assert_eq!(&t.to_bytes()[..], expected.as_bytes());
            assert_eq!(t.to_string(), expected);
            assert_eq!(parse(&expected), Ok(t));
        }
        // The bytes next to the digit ranges, and outside ASCII, are not digits, in every field.
        for bad in [b'/', b':', b'`', b'g', b'A', b'F', 0x80, 0xff] {
            for at in [0, 1, 3, 34, 36, 51, 53, 54] {
                let mut value = VALID.as_bytes().to_vec();
                value[at] = bad;
                assert!(TraceParent::parse(&value).is_err(), "{bad:#x} at {at}");
            }
        }
    }

    /// Every outcome of `extract_values`, with the counters' exact moves. The counters are
    /// process-wide, so this is the one test of this crate that extracts.
    #[test]
    fn extract_counts_every_outcome_and_never_fails() {
        let before = stats();
        // Valid: a remote parent, its sampled flag, its tracestate.
        let (context, s) = extract_values(
            ["00-12345678901234567890123456789012-1234567890123456-00"],
            ["foo=1,bar=2"],
        );
        assert_eq!(context.trace_id().unwrap().to_string(), TRACE);
        assert_eq!(context.event_id(), Some(EventId(0x1234_5678_9012_3456)));
        assert!(context.is_remote());
        assert_eq!(context.is_sampled(), Some(false));
        assert_eq!(s.as_str(), "foo=1,bar=2");
        // Valid traceparent, invalid tracestate: the context is kept, the state discarded.
        let (context, s) = extract_values([VALID], ["foo=1,FOO=2"]);
        assert!(context.is_remote() && s.is_empty());
        // Absent: a new trace; a tracestate without traceparent is discarded.
        let (context, s) = extract_values([], ["foo=1"]);
        assert!(context.is_none() && s.is_empty());
        // Rejected: malformed, all-zero, duplicated (test_traceparent_duplicated).
        for values in [
            &["00-00000000000000000000000000000000-1234567890123456-01"][..],
            &["00-12345678901234567890123456789012-0000000000000000-01"],
            &["not a traceparent"],
            &[VALID, "00-12345678901234567890123456789011-1234567890123456-01"],
        ] {
            let (context, s) = extract_values(values.iter().copied(), []);
            assert!(context.is_none() && s.is_empty(), "{values:?}");
        }
        let after = stats();
        assert_eq!(after.continued - before.continued, 2);
        assert_eq!(after.absent - before.absent, 1);
        assert_eq!(after.rejected - before.rejected, 4);
        assert_eq!(after.tracestate_discarded - before.tracestate_discarded, 2);
    }

    #[test]
    fn events_under_a_remote_parent_know_it_and_inherit_its_sampled_flag() {
        use crate::{Event, EventContext, EventedSubscriber, Notifier, Payload, Subscriber};
        use std::sync::{Arc, Mutex};
        /// Id, parent id, parent is remote, sampled.
        type Start = (EventId, Option<EventId>, bool, bool);
        #[derive(Default)]
        struct Starts(Mutex<Vec<Start>>);
        impl EventedSubscriber for Starts {
            fn start(&self, _: &str, e: &EventContext, _: &Payload) {
                let row = (e.id(), e.parent_id(), e.parent_is_remote(), e.is_sampled());
                self.0.lock().unwrap().push(row);
            }
            fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
        }
        let notifier = Notifier::new();
        let starts = Arc::new(Starts::default());
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let _a = notifier.subscribe(crate::Pattern::all(), Subscriber::evented(starts.clone()));
        let _b = notifier.subscribe(
            crate::Pattern::all(),
            Subscriber::event(move |e: &Event| {
                sink.lock()
                    .unwrap()
                    .push((e.id(), e.parent_is_remote(), e.is_sampled()))
            }),
        );
        let remote = parse("00-12345678901234567890123456789012-1234567890123456-00").unwrap();
        let (outgoing, captured) = Context::from_traceparent(&remote).in_scope(|| {
            notifier.instrument("request.http", Payload::new, |_| {
                notifier.instrument("query.sql", Payload::new, |_| {
                    (Context::current().traceparent(), Context::current())
                })
            })
        });
        let outgoing = outgoing.unwrap();
        assert_eq!(outgoing.flags(), TraceFlags::NONE, "the outgoing traceparent says 00");
        assert_eq!(outgoing.trace_id(), remote.trace_id());
        assert_eq!(captured.is_sampled(), Some(false));
        assert!(!captured.is_remote());
        // Across a thread through a captured context, the decision holds.
        let n = notifier.clone();
        std::thread::spawn(move || captured.in_scope(|| n.instrument("job.app", Payload::new, |_| ())))
            .join()
            .unwrap();
        // Without a remote parent, the default sampler keeps the trace.
        let local = notifier.instrument("request.http", Payload::new, |_| Context::current());
        assert_eq!((local.is_sampled(), local.is_remote()), (Some(true), false));
        let starts = starts.0.lock().unwrap().clone();
        let (request, query, job) = (starts[0], starts[1], starts[2]);
        assert_eq!(
            (request.1, request.2, request.3),
            (Some(remote.parent_id()), true, false)
        );
        assert_eq!((query.1, query.2, query.3), (Some(request.0), false, false));
        assert_eq!((job.1, job.2, job.3), (Some(query.0), false, false));
        let events = events.lock().unwrap().clone();
        assert_eq!(
            events[..3],
            [(query.0, false, false), (request.0, true, false), (job.0, false, false)]
        );
        assert!(events[3].2, "a local root of the default sampler is sampled");
    }

    #[cfg(feature = "http")]
    #[test]
    fn http_headers_inject_and_extract() {
        use http::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        headers.insert("TraceParent", HeaderValue::from_static(VALID));
        headers.append("tracestate", HeaderValue::from_static("foo=1"));
        headers.append("tracestate", HeaderValue::from_static("bar=2"));
        let (context, s) = extract_with_state(&headers);
        assert!(context.is_remote());
        assert_eq!(s.as_str(), "foo=1,bar=2");

        let mut out = HeaderMap::new();
        inject_with_state(&context, &s, &mut out);
        assert_eq!(
            out[TRACEPARENT], VALID,
            "the remote context itself: its parent id is sent on"
        );
        assert_eq!(out[TRACESTATE], "foo=1,bar=2");
        inject_with_state(&Context::none(), &s, &mut out);
        assert!(out.is_empty(), "no context: both headers removed");

        let mut bad = HeaderMap::new();
        bad.insert(TRACEPARENT, HeaderValue::from_bytes(b"00-\xff").unwrap());
        assert!(extract(&bad).is_none());
        // A future version's data after the four fields must be text; the fields themselves take
        // only hex digits and dashes, with spaces or tabs around.
        let future = b"cc-12345678901234567890123456789012-1234567890123456-01-";
        let mut tail = HeaderMap::new();
        tail.insert(
            TRACEPARENT,
            HeaderValue::from_bytes(&[&future[..], b"\xff"].concat()).unwrap(),
        );
        assert!(extract(&tail).is_none(), "not text after the fields");
        tail.insert(
            TRACEPARENT,
            HeaderValue::from_bytes(&[&future[..], b"x"].concat()).unwrap(),
        );
        assert!(extract(&tail).is_remote());
        tail.insert(TRACEPARENT, HeaderValue::from_str(&format!(" \t{VALID}\t ")).unwrap());
        assert!(extract(&tail).is_remote(), "spaces and tabs around");
        let mut in_a_field = VALID.as_bytes().to_vec();
        in_a_field[10] = 0xe9;
        tail.insert(TRACEPARENT, HeaderValue::from_bytes(&in_a_field).unwrap());
        assert!(extract(&tail).is_none(), "not text in a field");
        let mut two = HeaderMap::new();
        two.append(TRACEPARENT, HeaderValue::from_static(VALID));
        two.append(TRACEPARENT, HeaderValue::from_static(VALID));
        assert!(extract(&two).is_none(), "duplicated traceparent");
        // A header name that is not traceparent is not read (test_traceparent_header_name).
        let mut misnamed = HeaderMap::new();
        misnamed.insert("trace-parent", HeaderValue::from_static(VALID));
        assert!(extract(&misnamed).is_none());
    }
}
