//! [`TraceId`]: the 128-bit id shared by every event of one trace (W3C trace-context's `trace-id`).

use std::fmt;
use std::num::NonZeroU128;
use std::str::FromStr;

use crate::escape::Excerpt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id of a trace: every listened event carries one. A root event (no parent) gets a random
/// one; every descendant inherits its parent's, also across threads and tasks when the
/// [`Context`](crate::Context) is carried along.
///
/// Compatible with W3C trace-context's `trace-id` and OpenTelemetry's `TraceId`: 16 bytes, never
/// all zero, written as 32 lowercase hex digits ([`Display`](fmt::Display), [`FromStr`], serde).
/// Random ids come from a per-thread generator seeded from the standard library's `RandomState`:
/// unpredictable enough to avoid collisions, not meant as a secret.
///
/// ```
/// use notify_core::TraceId;
/// let id: TraceId = "4bf92f3577b34da6a3ce929d0e0e4736".parse()?;
/// assert_eq!(id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(id.to_bytes()[0], 0x4b);
/// assert!("00000000000000000000000000000000".parse::<TraceId>().is_err());
/// # Ok::<(), notify_core::context::TraceIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(NonZeroU128);

impl TraceId {
    /// The trace id with this numeric value; `None` for 0 (W3C forbids the all-zero id).
    ///
    /// ```
    /// assert_eq!(notify_core::TraceId::new(0), None);
    /// assert_eq!(notify_core::TraceId::new(7).unwrap().get(), 7);
    /// ```
    pub const fn new(value: u128) -> Option<TraceId> {
        match NonZeroU128::new(value) {
            Some(v) => Some(TraceId(v)),
            None => None,
        }
    }

    /// The numeric value (never 0).
    pub const fn get(self) -> u128 {
        self.0.get()
    }

    /// The 16 bytes, big-endian (the order of the hex text and of OpenTelemetry's `TraceId::to_bytes`).
    ///
    /// ```
    /// let id = notify_core::TraceId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]).unwrap();
    /// assert_eq!(id.get(), 1);
    /// assert_eq!(id.to_bytes()[15], 1);
    /// ```
    pub const fn to_bytes(self) -> [u8; 16] {
        self.get().to_be_bytes()
    }

    /// The trace id of 16 big-endian bytes; `None` when they are all zero.
    pub const fn from_bytes(bytes: [u8; 16]) -> Option<TraceId> {
        TraceId::new(u128::from_be_bytes(bytes))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.get())
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

/// Why a text is not a [`TraceId`]. It quotes the text through an
/// [`Excerpt`](crate::escape::Excerpt): escaped, at most 64 characters and the input's length, so
/// a 1 MiB URL or header makes a message (and an error) of under 200 bytes.
///
/// ```
/// let err = "xyz".parse::<notify_core::TraceId>().unwrap_err();
/// assert_eq!(err.to_string(), "a trace id is 32 hex digits, not all zero: \"xyz\"");
/// let huge = "z".repeat(1 << 20).parse::<notify_core::TraceId>().unwrap_err();
/// assert_eq!(huge.to_string(), format!("a trace id is 32 hex digits, not all zero: \"{}…[1048576 bytes]\"", "z".repeat(64)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceIdError {
    text: Excerpt,
}

impl fmt::Display for TraceIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a trace id is 32 hex digits, not all zero: \"{}\"", self.text)
    }
}

impl std::error::Error for TraceIdError {}

impl FromStr for TraceId {
    type Err = TraceIdError;

    /// Parses 32 hex digits (either case), as in a W3C `traceparent` header.
    fn from_str(text: &str) -> Result<TraceId, TraceIdError> {
        let error = || TraceIdError {
            text: Excerpt::new(text),
        };
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(error());
        }
        u128::from_str_radix(text, 16)
            .ok()
            .and_then(TraceId::new)
            .ok_or_else(error)
    }
}

#[cfg(feature = "serde")]
impl Serialize for TraceId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for TraceId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TraceId, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A small, fast, non-cryptographic generator (wyrand), one per thread, for root trace ids.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded from the standard library's per-process random keys and a counter, so
    /// two threads never share a sequence.
    pub(crate) fn seeded() -> Rng {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static STREAM: AtomicU64 = AtomicU64::new(0);
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(STREAM.fetch_add(1, Ordering::Relaxed));
        Rng(hasher.finish())
    }

    /// The state to keep.
    pub(crate) fn state(self) -> u64 {
        self.0
    }

    /// A random span (event) id from `state`, never 0: one step of the Weyl sequence through
    /// splitmix64's finalizer, a bijection, so one thread's ids are all different until its
    /// state wraps after 2^64 steps (the one state that maps to 0 is skipped).
    #[inline]
    pub(crate) fn span_id(state: &mut u64) -> u64 {
        loop {
            *state = state.wrapping_add(0xa076_1d64_78bd_642f);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            if z != 0 {
                return z;
            }
        }
    }

    /// A random trace id from `state`: one step of the generator (a Weyl sequence, so a thread's
    /// states never repeat within 2^64 steps), its state times an odd constant as the id's high
    /// half (a bijection: the high halves of one thread's ids are all different, so its ids are)
    /// and wyrand's output as the low half (W3C trace-context's random part, the right-most bytes).
    #[inline]
    pub(crate) fn trace_id(state: &mut u64) -> TraceId {
        loop {
            *state = state.wrapping_add(0xa076_1d64_78bd_642f);
            let t = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
            let low = ((t >> 64) as u64) ^ (t as u64);
            let high = state.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            if let Some(id) = TraceId::new((u128::from(high) << 64) | u128::from(low)) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_bad_text() {
        let id = TraceId::new(0x0af7651916cd43dd8448eb211c80319c).unwrap();
        assert_eq!(id.to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!("0AF7651916CD43DD8448EB211C80319C".parse::<TraceId>(), Ok(id));
        for bad in [
            "",
            "0af7651916cd43dd8448eb211c80319",
            "+af7651916cd43dd8448eb211c80319c",
            "0af7651916cd43dd8448eb211c80319g",
        ] {
            assert!(bad.parse::<TraceId>().is_err(), "{bad:?}");
        }
        #[cfg(feature = "serde")]
        {
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                "\"0af7651916cd43dd8448eb211c80319c\""
            );
            assert_eq!(
                serde_json::from_str::<TraceId>("\"0af7651916cd43dd8448eb211c80319c\"").unwrap(),
                id
            );
            assert!(serde_json::from_str::<TraceId>("\"00000000000000000000000000000000\"").is_err());
        }
    }

    /// Span ids of two independently seeded generators (two processes continuing one trace):
    /// none shared, none zero, every bit used, in a million of each.
    #[test]
    fn span_ids_of_two_generators_never_collide_in_a_million() {
        let (mut a, mut b) = (Rng::seeded().state(), Rng::seeded().state());
        let mut ids: Vec<u64> = (0..1_000_000).map(|_| Rng::span_id(&mut a)).collect();
        ids.extend((0..1_000_000).map(|_| Rng::span_id(&mut b)));
        assert!(!ids.contains(&0));
        let (ones, zeros) = ids.iter().fold((0_u64, 0_u64), |(o, z), id| (o | id, z | !id));
        assert_eq!((ones, zeros), (u64::MAX, u64::MAX));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 2_000_000);
    }

    #[test]
    fn the_state_that_maps_to_zero_is_skipped() {
        // splitmix64's finalizer maps 0 to 0: the state before it steps past it.
        let mut state = 0_u64.wrapping_sub(0xa076_1d64_78bd_642f);
        let id = Rng::span_id(&mut state);
        assert_ne!(id, 0);
        assert_eq!(state, 0xa076_1d64_78bd_642f, "one extra step");
    }

    #[test]
    fn random_ids_differ_between_generators_and_calls() {
        let (mut a, mut b) = (Rng::seeded().state(), Rng::seeded().state());
        let mut ids: Vec<TraceId> = (0..1000).map(|_| Rng::trace_id(&mut a)).collect();
        ids.extend((0..1000).map(|_| Rng::trace_id(&mut b)));
        // Every one of the 128 bits is 0 in some ids and 1 in others (no bit stuck, as the low
        // bit of a bare product would be).
        let (ones, zeros) = ids
            .iter()
            .fold((0_u128, 0_u128), |(o, z), id| (o | id.get(), z | !id.get()));
        assert_eq!((ones, zeros), (u128::MAX, u128::MAX));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 2000);
    }
}
