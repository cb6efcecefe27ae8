//! The nesting limit of payload values: lists and maps nest at most [`Value::MAX_NESTING`] deep.

use notify_core::Value;

/// The error of a value nested deeper than [`Value::MAX_NESTING`] lists and maps (notify-core's
/// text for the same limit): it names the limit, never a value.
pub(super) fn too_deep() -> String {
    format!("payload value nested deeper than {} lists and maps", Value::MAX_NESTING)
}

/// True when `value` holds more than `max` lists and maps inside one another; looks no deeper
/// than `max + 1` levels (the recursion is bounded whatever the value).
pub(super) fn nests_deeper_than(value: &Value, max: usize) -> bool {
    match value {
        Value::List(items) => max == 0 || items.iter().any(|v| nests_deeper_than(v, max - 1)),
        Value::Map(map) => max == 0 || map.iter().any(|(_, v)| nests_deeper_than(v, max - 1)),
        _ => false,
    }
}
