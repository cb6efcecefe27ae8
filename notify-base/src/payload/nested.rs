//! [`Value`]'s `Drop`, `Clone`, `PartialEq` and `Debug` without one stack frame per nesting level.
//!
//! Decoders refuse values nested deeper than [`Value::MAX_NESTING`], but code in the process can
//! build any depth (`Value::List(vec![deep])` in a loop), and the thread that frees, copies or
//! compares such a value may have a small stack (an exporter's). Derived implementations recurse
//! once per level: a value about 15,000 levels deep aborted the process when its event was freed
//! on an exporter thread. Here `Drop`, `Clone` and `PartialEq` walk the value with a heap stack of
//! their own (any depth; a value without lists or maps inside never allocates one), and `Debug`
//! writes at most [`Value::MAX_NESTING`] levels, deeper lists and maps as `…`, as `Display` does.
//! `Serialize` refuses a value nested deeper than the limit (see `serde_impls`).

use std::fmt;

use smallvec::SmallVec;

use super::{Key, Payload, Value};

impl Value {
    /// True for a list or a map (a value that may hold others).
    #[inline]
    fn is_nested(&self) -> bool {
        matches!(self, Value::List(_) | Value::Map(_))
    }

    /// A copy of a value that is not a list or a map.
    fn clone_leaf(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Bool(v) => Value::Bool(*v),
            Value::I64(v) => Value::I64(*v),
            Value::U64(v) => Value::U64(*v),
            Value::I128(v) => Value::I128(*v),
            Value::U128(v) => Value::U128(*v),
            Value::F64(v) => Value::F64(*v),
            Value::Str(v) => Value::Str(v.clone()),
            Value::Duration(v) => Value::Duration(*v),
            Value::Time(v) => Value::Time(*v),
            Value::Exception { type_name, message } => Value::Exception {
                type_name: type_name.clone(),
                message: message.clone(),
            },
            Value::List(_) | Value::Map(_) => unreachable!("lists and maps are copied by `clone_nested`"),
        }
    }
}

impl Drop for Value {
    /// Frees nested lists and maps from a heap stack, so that no depth overflows the thread's
    /// stack: each value is emptied of its nested values before it is dropped.
    fn drop(&mut self) {
        let mut stack: Vec<Value> = match self {
            Value::List(items) if items.iter().any(Value::is_nested) => std::mem::take(items),
            Value::Map(map) if map.entries.iter().any(|(_, v)| v.is_nested()) => take_values(map),
            _ => return,
        };
        while let Some(mut value) = stack.pop() {
            match &mut value {
                Value::List(items) => stack.append(items),
                Value::Map(map) => stack.extend(take_values(map)),
                _ => {}
            }
            // `value` drops here holding no nested value: its own `drop` returns at once.
        }
    }
}

/// Takes the values out of `map` (its keys and index go, so it stays consistent).
fn take_values(map: &mut Payload) -> Vec<Value> {
    map.index = None;
    std::mem::take(&mut map.entries).into_iter().map(|(_, v)| v).collect()
}

impl Clone for Value {
    fn clone(&self) -> Value {
        if self.is_nested() {
            clone_nested(self)
        } else {
            self.clone_leaf()
        }
    }
}

/// A list or a map being copied by [`clone_nested`].
enum Copying<'a> {
    List {
        items: std::slice::Iter<'a, Value>,
        out: Vec<Value>,
    },
    Map {
        source: &'a Payload,
        entries: std::slice::Iter<'a, (Key, Value)>,
        /// A `Vec` (not the payload's inline `SmallVec`, which would make every frame large),
        /// moved inline at the end when it fits.
        out: Vec<(Key, Value)>,
        /// The key of the nested value being copied.
        key: Option<Key>,
    },
}

impl<'a> Copying<'a> {
    fn new(value: &'a Value) -> Copying<'a> {
        match value {
            Value::List(items) => Copying::List {
                items: items.iter(),
                out: Vec::with_capacity(items.len()),
            },
            Value::Map(map) => Copying::Map {
                source: map,
                entries: map.entries.iter(),
                out: Vec::with_capacity(map.entries.len()),
                key: None,
            },
            _ => unreachable!("only lists and maps are copied here"),
        }
    }

    /// The next nested value to copy (its key kept), after copying the leaves before it; `None`
    /// when this list or map is done.
    fn next_nested(&mut self) -> Option<&'a Value> {
        match self {
            Copying::List { items, out } => {
                for item in items.by_ref() {
                    if item.is_nested() {
                        return Some(item);
                    }
                    out.push(item.clone_leaf());
                }
                None
            }
            Copying::Map { entries, out, key, .. } => {
                for (k, v) in entries.by_ref() {
                    if v.is_nested() {
                        *key = Some(k.clone());
                        return Some(v);
                    }
                    out.push((k.clone(), v.clone_leaf()));
                }
                None
            }
        }
    }

    /// Adds the copy of the nested value [`Copying::next_nested`] returned.
    fn push(&mut self, copy: Value) {
        match self {
            Copying::List { out, .. } => out.push(copy),
            Copying::Map { out, key, .. } => out.push((key.take().expect("set by next_nested"), copy)),
        }
    }

    fn finish(self) -> Value {
        match self {
            Copying::List { out, .. } => Value::List(out),
            Copying::Map { source, out, .. } => Value::Map(Box::new(Payload {
                entries: SmallVec::from_vec(out),
                // Same keys at the same positions: the index holds as it is.
                index: source.index.clone(),
            })),
        }
    }
}

/// Copies a list or a map, depth first, from a heap stack.
fn clone_nested(value: &Value) -> Value {
    let mut stack = vec![Copying::new(value)];
    loop {
        let top = stack.last_mut().expect("the root is popped last");
        if let Some(nested) = top.next_nested() {
            stack.push(Copying::new(nested));
            continue;
        }
        let done = stack.pop().expect("just looked at").finish();
        match stack.last_mut() {
            Some(parent) => parent.push(done),
            None => return done,
        }
    }
}

impl PartialEq for Value {
    /// Equal variants with equal contents (lists item by item, maps entry by entry in order;
    /// `F64` as `f64`s compare, so `NaN` is not equal to itself), compared from a heap stack.
    fn eq(&self, other: &Value) -> bool {
        let mut pending: Vec<(&Value, &Value)> = Vec::new();
        let (mut a, mut b) = (self, other);
        loop {
            let same = match (a, b) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::I64(x), Value::I64(y)) => x == y,
                (Value::U64(x), Value::U64(y)) => x == y,
                (Value::I128(x), Value::I128(y)) => x == y,
                (Value::U128(x), Value::U128(y)) => x == y,
                (Value::F64(x), Value::F64(y)) => x == y,
                (Value::Str(x), Value::Str(y)) => x == y,
                (Value::Duration(x), Value::Duration(y)) => x == y,
                (Value::Time(x), Value::Time(y)) => x == y,
                (
                    Value::Exception { type_name, message },
                    Value::Exception {
                        type_name: other_type,
                        message: other_message,
                    },
                ) => type_name == other_type && message == other_message,
                (Value::List(x), Value::List(y)) => {
                    x.len() == y.len() && {
                        pending.extend(x.iter().zip(y.iter()));
                        true
                    }
                }
                (Value::Map(x), Value::Map(y)) => {
                    x.entries.len() == y.entries.len()
                        && x.entries.iter().zip(y.entries.iter()).all(|((k, _), (l, _))| k == l)
                        && {
                            pending.extend(x.entries.iter().zip(y.entries.iter()).map(|((_, v), (_, w))| (v, w)));
                            true
                        }
                }
                _ => false,
            };
            if !same {
                return false;
            }
            match pending.pop() {
                Some((x, y)) => (a, b) = (x, y),
                None => return true,
            }
        }
    }
}

impl fmt::Debug for Value {
    /// As `#[derive(Debug)]` would write it (`List([U64(1), Str("a")])`), at most
    /// [`Value::MAX_NESTING`] lists and maps deep: deeper ones are written `List(…)` / `Map(…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        DebugAt(self, 0).fmt(f)
    }
}

/// A value's `Debug` at nesting `depth`.
struct DebugAt<'a>(&'a Value, usize);

/// The items of a list at nesting `depth`.
struct ListAt<'a>(&'a [Value], usize);

/// The entries of a map at nesting `depth`.
struct MapAt<'a>(&'a Payload, usize);

/// `…`, unquoted.
struct Elided;

impl fmt::Debug for Elided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("…")
    }
}

impl fmt::Debug for DebugAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let depth = self.1;
        match self.0 {
            Value::Null => f.write_str("Null"),
            Value::Bool(v) => f.debug_tuple("Bool").field(v).finish(),
            Value::I64(v) => f.debug_tuple("I64").field(v).finish(),
            Value::U64(v) => f.debug_tuple("U64").field(v).finish(),
            Value::I128(v) => f.debug_tuple("I128").field(v).finish(),
            Value::U128(v) => f.debug_tuple("U128").field(v).finish(),
            Value::F64(v) => f.debug_tuple("F64").field(v).finish(),
            Value::Str(v) => f.debug_tuple("Str").field(v).finish(),
            Value::Duration(v) => f.debug_tuple("Duration").field(v).finish(),
            Value::Time(v) => f.debug_tuple("Time").field(v).finish(),
            Value::Exception { type_name, message } => f
                .debug_struct("Exception")
                .field("type_name", type_name)
                .field("message", message)
                .finish(),
            Value::List(_) if depth >= Value::MAX_NESTING => f.debug_tuple("List").field(&Elided).finish(),
            Value::Map(_) if depth >= Value::MAX_NESTING => f.debug_tuple("Map").field(&Elided).finish(),
            Value::List(items) => f.debug_tuple("List").field(&ListAt(items, depth + 1)).finish(),
            Value::Map(map) => f.debug_tuple("Map").field(&MapAt(map, depth + 1)).finish(),
        }
    }
}

impl fmt::Debug for ListAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|v| DebugAt(v, self.1)))
            .finish()
    }
}

impl fmt::Debug for MapAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, DebugAt(v, self.1))))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[[…[1]…]]`, `depth` lists deep, built without recursion.
    fn deep_list(depth: usize) -> Value {
        let mut deep = Value::from(1_u64);
        for _ in 0..depth {
            deep = Value::List(vec![deep]);
        }
        deep
    }

    /// The same, alternating lists and maps (`{"k": [{"k": …}]}`).
    fn deep_mixed(depth: usize) -> Value {
        let mut deep = Value::from("leaf");
        for level in 0..depth {
            deep = if level % 2 == 0 {
                Value::List(vec![Value::Null, deep])
            } else {
                Value::Map(Box::new(Payload::new().with("n", level as u64).with("k", deep)))
            };
        }
        deep
    }

    /// Issue 44 item 8: a value 1,000,000 levels deep is cloned, compared, formatted and freed on
    /// a thread with a 256 KiB stack (derived implementations needed one frame per level: about
    /// 15,000 levels aborted a 2 MiB thread).
    #[test]
    fn i44_8_a_value_a_million_deep_is_cloned_compared_formatted_and_freed_on_a_small_stack() {
        const DEPTH: usize = 1_000_000;
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                for deep in [deep_list(DEPTH), deep_mixed(DEPTH)] {
                    let copy = deep.clone();
                    assert!(copy == deep);
                    let mut other = deep_list(DEPTH);
                    assert_eq!(copy == other, matches!(deep, Value::List(ref l) if l.len() == 1));
                    // One leaf differs, a million levels down.
                    let mut at = &mut other;
                    while let Value::List(items) = at {
                        at = &mut items[0];
                    }
                    *at = Value::from(2_u64);
                    assert!(copy != other);
                    let text = format!("{copy:?}");
                    assert_eq!(text.matches('…').count(), 1, "elided once, below the limit");
                    assert!(text.len() < 4_000, "{} bytes", text.len());
                    drop((deep, copy, other));
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn debug_is_the_derived_form_and_elides_below_the_limit() {
        let value = Value::List(vec![
            Value::U64(1),
            Value::from("a"),
            Value::Map(Box::new(Payload::new().with("k", Value::Null))),
            Value::Exception {
                type_name: "E".into(),
                message: "m".into(),
            },
        ]);
        assert_eq!(
            format!("{value:?}"),
            r#"List([U64(1), Str("a"), Map({"k": Null}), Exception { type_name: "E", message: "m" }])"#
        );
        let deep = deep_list(Value::MAX_NESTING + 1);
        let text = format!("{deep:?}");
        assert_eq!(text.matches("List([").count(), Value::MAX_NESTING);
        assert!(text.contains("List(…)"), "{text}");
    }

    #[test]
    fn clone_and_eq_keep_order_keys_and_the_index_of_a_large_map() {
        let mut map = Payload::new();
        for i in 0..40_u64 {
            map.insert(format!("k{i}"), Value::List(vec![Value::U64(i), Value::F64(f64::NAN)]));
        }
        let value = Value::Map(Box::new(map));
        let copy = value.clone();
        let Value::Map(copied) = &copy else { panic!() };
        assert_eq!(
            copied.get("k39").and_then(|v| v.as_list()).map(|l| l[0].clone()),
            Some(Value::U64(39))
        );
        assert!(copy != value, "NaN is not equal to itself, as f64 compares");
        assert!(Value::List(vec![Value::U64(1)]) != Value::List(vec![Value::U64(1), Value::U64(2)]));
        assert!(Value::I64(1) != Value::U64(1));
    }
}
