//! The position and name of each [`WireValue`] variant: what [`ValueOut`] writes.
//!
//! [`WireValue`]: super::serde_value::WireValue
//! [`ValueOut`]: super::serde_value::ValueOut

pub(super) const BOOL: (u32, &str) = (0, "Bool");
pub(super) const I64: (u32, &str) = (1, "I64");
pub(super) const U64: (u32, &str) = (2, "U64");
pub(super) const F64: (u32, &str) = (3, "F64");
pub(super) const STR: (u32, &str) = (4, "Str");
pub(super) const DURATION: (u32, &str) = (5, "Duration");
pub(super) const EXCEPTION: (u32, &str) = (6, "Exception");
pub(super) const NULL: (u32, &str) = (7, "Null");
pub(super) const I128: (u32, &str) = (8, "I128");
pub(super) const U128: (u32, &str) = (9, "U128");
pub(super) const TIME: (u32, &str) = (10, "Time");
pub(super) const LIST: (u32, &str) = (11, "List");
pub(super) const MAP: (u32, &str) = (12, "Map");

/// The names of [`WireValue`]'s variants, in position order.
///
/// [`WireValue`]: super::serde_value::WireValue
pub(super) const VARIANTS: &[&str] = &[
    "Bool",
    "I64",
    "U64",
    "F64",
    "Str",
    "Duration",
    "Exception",
    "Null",
    "I128",
    "U128",
    "Time",
    "List",
    "Map",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_names_match_their_positions() {
        for (i, n) in [
            BOOL, I64, U64, F64, STR, DURATION, EXCEPTION, NULL, I128, U128, TIME, LIST, MAP,
        ] {
            assert_eq!(VARIANTS[i as usize], n);
        }
        assert_eq!(VARIANTS.len(), 13);
    }
}
