//! `id_type!`: the one definition of the crate's id newtypes ([`EventId`](crate::EventId),
//! [`TransactionId`](crate::TransactionId), [`SubscriptionId`](crate::SubscriptionId)).
//!
//! Each is a `#[repr(transparent)]` `u64` that is `Copy`, ordered and hashed by its number,
//! converts into `u64`, and serializes as the bare number (feature `serde`), or, the `hex` form,
//! as 16 hex digits in a string in human-readable formats. Three display forms:
//!
//! * `decimal`: displays as the number (`17`), parses it back ([`FromStr`](std::str::FromStr)),
//!   and is made from any `u64` (`new`, `From<u64>`): ids that other processes send (importers,
//!   bridges, `publish`).
//! * `hash`: displays as `#17`, as failure reports write it, and is made only by this crate.
//! * `hex`: displays as 16 lowercase hex digits (`0000000000000011`), the form of a W3C span id,
//!   parses that form back, and is made from any `u64` as `decimal` ids are: the event id, so
//!   that what a program prints matches its log lines, its JSON and `traceparent` headers.

use crate::escape::Excerpt;

/// Defines an id newtype. The caller gives the docs and derives-free struct line; the macro adds
/// everything else. See the module docs for the two forms.
macro_rules! id_type {
    // The shared part: the struct, `get`, `From<Id> for u64`, serde.
    (@common $(#[$meta:meta])* $name:ident, $get_doc:literal, $number:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub(crate) u64);

        // `Name(number)`, the number as the form displays it (`hex` ids: 16 hex digits).
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!(stringify!($name), "(", $number, ")"), self.0)
            }
        }

        impl $name {
            #[doc = $get_doc]
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

    };

    // Made from any `u64` (ids other processes send: importers, bridges, `publish`).
    (@new $name:ident, $new_doc:literal) => {
        impl $name {
            #[doc = $new_doc]
            pub const fn new(id: u64) -> $name {
                $name(id)
            }
        }

        impl From<u64> for $name {
            fn from(id: u64) -> $name {
                $name(id)
            }
        }
    };

    // Serialized as the bare number.
    (@serde number $name:ident) => {
        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_u64(self.0)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                <u64 as serde::Deserialize>::deserialize(deserializer).map($name)
            }
        }
    };

    // Human-readable formats (JSON): 16 lowercase hex digits in a string, as W3C writes span ids,
    // so readers that hold numbers as doubles stay exact; the bare number is read too (the form
    // of earlier versions). Binary formats (postcard): the `u64`.
    (@serde hex number $name:ident) => {
        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                if serializer.is_human_readable() {
                    serializer.collect_str(&format_args!("{:016x}", self.0))
                } else {
                    serializer.serialize_u64(self.0)
                }
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                if deserializer.is_human_readable() {
                    deserializer.deserialize_any($crate::id_type::HexOrNumber).map($name)
                } else {
                    <u64 as serde::Deserialize>::deserialize(deserializer).map($name)
                }
            }
        }
    };

    (
        $(#[$meta:meta])*
        pub struct $name:ident: decimal;
        new: $new_doc:literal;
        get: $get_doc:literal;
    ) => {
        id_type!(@common $(#[$meta])* $name, $get_doc, "{}");
        id_type!(@serde number $name);

        id_type!(@new $name, $new_doc);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        #[doc = "Parses the [`Display`](std::fmt::Display) form, a decimal number (`\"17\"`), e.g. from a URL or a log line."]
        #[doc = ""]
        #[doc = "```"]
        #[doc = "# use notify_core::{context::*, event::*, subscriber::*};"]
        #[doc = concat!("let id: ", stringify!($name), " = \"17\".parse()?;")]
        #[doc = concat!("assert_eq!(id, ", stringify!($name), "::new(17));")]
        #[doc = concat!("assert!(\"#17\".parse::<", stringify!($name), ">().is_err());")]
        #[doc = "# Ok::<(), std::num::ParseIntError>(())"]
        #[doc = "```"]
        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;

            fn from_str(text: &str) -> Result<$name, std::num::ParseIntError> {
                text.parse().map($name)
            }
        }
    };

    (
        $(#[$meta:meta])*
        pub struct $name:ident: hash;
        get: $get_doc:literal;
    ) => {
        id_type!(@common $(#[$meta])* $name, $get_doc, "{}");
        id_type!(@serde number $name);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "#{}", self.0)
            }
        }
    };

    (
        $(#[$meta:meta])*
        pub struct $name:ident: hex;
        new: $new_doc:literal;
        get: $get_doc:literal;
    ) => {
        id_type!(@common $(#[$meta])* $name, $get_doc, "{:016x}");
        id_type!(@serde hex number $name);

        id_type!(@new $name, $new_doc);

        /// 16 lowercase hex digits (`00f067aa0ba902b7`), as a W3C `traceparent` writes a span id.
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:016x}", self.0)
            }
        }

        /// Parses the [`Display`](std::fmt::Display) form: exactly 16 hex digits (either case),
        /// not all zero, e.g. from a URL, a log line or a `traceparent`'s parent-id.
        impl std::str::FromStr for $name {
            type Err = $crate::id_type::EventIdError;

            fn from_str(text: &str) -> Result<$name, $crate::id_type::EventIdError> {
                match $crate::id_type::hex_u64(text) {
                    Some(id) if id != 0 => Ok($name(id)),
                    _ => Err($crate::id_type::EventIdError::new(text)),
                }
            }
        }
    };
}

pub(crate) use id_type;

/// Exactly 16 hex digits (either case) as a number: the text form of `hex` ids.
pub(crate) fn hex_u64(text: &str) -> Option<u64> {
    if text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(text, 16).ok()
    } else {
        None
    }
}

/// Why a text is not an [`EventId`](crate::EventId): it must be exactly 16 hex digits, not all
/// zero (a W3C trace-context span id).
///
/// ```
/// use notify_core::event::EventId;
/// let err = "17".parse::<EventId>().unwrap_err();
/// assert_eq!(err.to_string(), "an event id is 16 hex digits, not all zero: \"17\"");
/// assert_eq!("00000000000000ff".parse::<EventId>(), Ok(EventId::new(255)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventIdError {
    text: Excerpt,
}

impl EventIdError {
    pub(crate) fn new(text: &str) -> EventIdError {
        // Bounded: the text may come from a URL or a header.
        EventIdError {
            text: Excerpt::new(text),
        }
    }
}

impl std::fmt::Display for EventIdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an event id is 16 hex digits, not all zero: \"{}\"", self.text)
    }
}

impl std::error::Error for EventIdError {}

/// Reads an id from 16 hex digits in a string (either case) or a bare non-negative number.
#[cfg(feature = "serde")]
pub(crate) struct HexOrNumber;

#[cfg(feature = "serde")]
impl serde::de::Visitor<'_> for HexOrNumber {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an id: 16 hex digits in a string, or a number")
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<u64, E> {
        Ok(n)
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<u64, E> {
        u64::try_from(n).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<u64, E> {
        // serde quotes the unexpected string whole: an excerpt of it (a 1 MB string in a
        // document would make a 1 MB error).
        hex_u64(text)
            .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(&Excerpt::new(text).to_string()), &self))
    }
}

#[cfg(test)]
mod tests {
    use crate::{EventId, SubscriptionId, TransactionId};

    /// What every decimal id does, for one type.
    fn decimal_id_behaves<T>(make: fn(u64) -> T)
    where
        T: Copy + Ord + std::fmt::Debug + std::fmt::Display + std::str::FromStr + Into<u64> + From<u64>,
        <T as std::str::FromStr>::Err: std::fmt::Debug,
    {
        assert_eq!(make(17).to_string(), "17");
        assert_eq!(format!("{:>4}|{:<3}|", make(7), make(3)), "   7|3  |");
        assert!(make(2) < make(10), "ordered by the number, not the text");
        assert_eq!(T::from(u64::MAX).into(), u64::MAX);
        for n in [0, 1, 17, u64::MAX] {
            assert_eq!(make(n).to_string().parse::<T>().unwrap(), make(n));
        }
        for bad in ["", "-1", "#17", " 17", "18446744073709551616"] {
            assert!(bad.parse::<T>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn decimal_ids_display_parse_and_order_by_the_number() {
        decimal_id_behaves(TransactionId::new);
        assert_eq!(format!("{:?}", TransactionId::new(3)), "TransactionId(3)");
    }

    #[test]
    fn event_ids_display_debug_and_parse_as_16_hex_digits() {
        for n in [1, 17, 0x00f0_67aa_0ba9_02b7, u64::MAX] {
            let text = EventId::new(n).to_string();
            assert_eq!(text.len(), 16, "{text}");
            assert_eq!(text.parse::<EventId>(), Ok(EventId::new(n)));
            assert_eq!(format!("{:?}", EventId::new(n)), format!("EventId({text})"));
        }
        assert_eq!("00F067AA0BA902B7".parse(), Ok(EventId::new(0x00f0_67aa_0ba9_02b7)));
        for bad in [
            "",
            "17",
            "0000000000000000",
            "+000000000000011",
            "00000000000000111",
            "000000000000001g",
        ] {
            let err = bad.parse::<EventId>().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("an event id is 16 hex digits, not all zero: {bad:?}")
            );
        }
        assert!(EventId::new(9) < EventId::new(10));
    }

    #[test]
    fn hash_ids_display_with_a_hash_sign() {
        assert_eq!(SubscriptionId(7).to_string(), "#7");
        assert_eq!(format!("{:?}", SubscriptionId(7)), "SubscriptionId(7)");
        assert!(SubscriptionId(9) < SubscriptionId(10));
        assert_eq!(u64::from(SubscriptionId(u64::MAX)), u64::MAX);
    }

    #[test]
    fn ids_are_the_size_of_a_u64() {
        assert_eq!(std::mem::size_of::<EventId>(), 8);
        assert_eq!(std::mem::size_of::<Option<TransactionId>>(), 16);
        assert_eq!(std::mem::size_of::<SubscriptionId>(), 8);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn event_ids_serialize_as_16_hex_digits_and_read_the_old_number_form() {
        assert_eq!(
            serde_json::to_string(&EventId::new(17)).unwrap(),
            "\"0000000000000011\""
        );
        for id in [1, 17, (1 << 53) + 1, u64::MAX - 1, u64::MAX] {
            let json = serde_json::to_string(&EventId::new(id)).unwrap();
            assert_eq!(json.len(), 18, "{json}");
            assert_eq!(serde_json::from_str::<EventId>(&json).unwrap().get(), id);
        }
        // A reader holding JSON numbers as doubles (JavaScript, jq) loses 2^53 + 1 in the old
        // form; the string form keeps every digit.
        let big = (1_u64 << 53) + 1;
        let as_double: f64 = serde_json::from_str(&big.to_string()).unwrap();
        assert_eq!(as_double as u64, 1 << 53, "the number form was not exact");
        let text: String = serde_json::from_str(&serde_json::to_string(&EventId::new(big)).unwrap()).unwrap();
        assert_eq!(
            (text.as_str(), u64::from_str_radix(&text, 16).unwrap()),
            ("0020000000000001", big)
        );
        // The old form (a bare number) still reads; uppercase hex too.
        assert_eq!(serde_json::from_str::<EventId>("17").unwrap(), EventId::new(17));
        assert_eq!(
            serde_json::from_str::<EventId>("\"FFFFFFFFFFFFFFFF\"").unwrap(),
            EventId::new(u64::MAX)
        );
        for bad in [
            "\"17\"",
            "\"000000000000001g\"",
            "\"00000000000000011\"",
            "-1",
            "null",
            "1.5",
        ] {
            assert!(serde_json::from_str::<EventId>(bad).is_err(), "{bad} read");
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn other_ids_serialize_as_the_bare_number() {
        assert_eq!(serde_json::to_string(&Some(TransactionId::new(3))).unwrap(), "3");
        assert_eq!(serde_json::to_string(&SubscriptionId(5)).unwrap(), "5");
        let max = TransactionId::new(u64::MAX);
        assert_eq!(
            serde_json::from_str::<TransactionId>(&serde_json::to_string(&max).unwrap()).unwrap(),
            max
        );
        assert_eq!(serde_json::from_str::<SubscriptionId>("5").unwrap(), SubscriptionId(5));
        for bad in ["\"17\"", "-1", "null"] {
            assert!(serde_json::from_str::<TransactionId>(bad).is_err(), "{bad} read");
        }
    }
}
