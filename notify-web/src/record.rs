//! What the recorder keeps of an event and of a trace.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use notify_core::{
    event::{EventId, Outcome},
    Event, TraceId, Value,
};

/// Bytes counted per payload entry beyond its text (two boxed strings).
const ENTRY_OVERHEAD: usize = 2 * std::mem::size_of::<Box<str>>();

/// One recorded event: what the page draws as one bar.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    name: Arc<str>,
    id: EventId,
    parent_id: Option<EventId>,
    parent_remote: bool,
    start: Instant,
    start_time: SystemTime,
    duration: Duration,
    outcome: Outcome,
    payload: Box<[(Box<str>, Box<str>)]>,
    truncated: bool,
    /// The W3C `tracestate` of the event's trace, as it carried it (shared, not copied).
    trace_state: notify_core::trace_context::TraceState,
}

impl TraceEvent {
    /// Copies what the page shows of `event`; `name` is the interned name; the payload is
    /// rendered to text (values with their `Display`) and capped at `payload_bytes`. Also returns
    /// how many of the payload values kept were nested deeper than [`Value::MAX_NESTING`] lists
    /// and maps: their text stops there (each deeper list or map written `…`), and the event is
    /// marked truncated.
    pub(crate) fn new(event: &Event, name: Arc<str>, payload_bytes: usize) -> (TraceEvent, u64) {
        let mut budget = payload_bytes;
        let mut payload = Vec::with_capacity(event.payload().len());
        let mut truncated = false;
        let mut too_deep = 0;
        for (key, value) in event.payload().iter() {
            let key: &str = key;
            let need = ENTRY_OVERHEAD + key.len();
            if need >= budget {
                truncated = true;
                break;
            }
            if nested_deeper_than_limit(value) {
                too_deep += 1;
                truncated = true;
            }
            let value = value.to_string();
            budget -= need;
            let cut = value.len() > budget;
            let value = if cut {
                truncated = true;
                let at = floor_char_boundary(&value, budget.saturating_sub('…'.len_utf8()));
                format!("{}…", &value[..at])
            } else {
                value
            };
            budget -= value.len().min(budget);
            payload.push((Box::from(key), value.into_boxed_str()));
            if cut {
                break;
            }
        }
        let stored = TraceEvent {
            name,
            id: event.id(),
            parent_id: event.parent_id(),
            parent_remote: event.parent_is_remote(),
            start: event.start(),
            start_time: event.start_time(),
            duration: event.duration(),
            outcome: event.outcome(),
            payload: payload.into_boxed_slice(),
            truncated,
            trace_state: event.trace_state().clone(),
        };
        (stored, too_deep)
    }

    /// The W3C `tracestate` of the event's trace ([`Event::trace_state`]; empty when none).
    pub fn trace_state(&self) -> &notify_core::trace_context::TraceState {
        &self.trace_state
    }

    /// The event name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The event id.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The parent's event id; `None` for the root of a trace.
    pub fn parent_id(&self) -> Option<EventId> {
        self.parent_id
    }

    /// True when the parent lives in another process (the event continued a W3C `traceparent`,
    /// [`Event::parent_is_remote`](notify_core::Event::parent_is_remote)): the local root of its
    /// trace.
    pub fn parent_is_remote(&self) -> bool {
        self.parent_remote
    }

    /// The local root of its trace: no parent, or a parent in another process.
    pub(crate) fn is_local_root(&self) -> bool {
        self.parent_id.is_none() || self.parent_remote
    }

    /// When the event started (monotonic clock).
    pub fn start(&self) -> Instant {
        self.start
    }

    /// When the event started (wall clock).
    pub fn start_time(&self) -> SystemTime {
        self.start_time
    }

    /// How long the event took.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// How the instrumented block ended.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The payload as `(key, value text)` pairs, in payload order.
    pub fn payload(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.payload.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Whether the payload was cut: to fit [`WebOptions::payload_bytes`](crate::WebOptions::payload_bytes),
    /// or a value nested deeper than [`Value::MAX_NESTING`] lists and maps written down to that
    /// depth only (counted in [`RecorderCounts::values_too_deep`](crate::RecorderCounts::values_too_deep)).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The namespace: what follows the first `.` of the name (`"query.sql"` → `"sql"`), or the
    /// whole name when it has no dot.
    pub fn namespace(&self) -> &str {
        namespace(&self.name)
    }

    /// The bytes this event takes: its fixed size and its payload text (the shared name is not
    /// counted).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<TraceEvent>()
            + self
                .payload
                .iter()
                .map(|(k, v)| ENTRY_OVERHEAD + k.len() + v.len())
                .sum::<usize>()
    }
}

/// The namespace of an event name: what follows its first `.`, or the whole name.
///
/// ```
/// assert_eq!(notify_web::namespace("query.sql"), "sql");
/// assert_eq!(notify_web::namespace("render.template.view"), "template.view");
/// assert_eq!(notify_web::namespace("tick"), "tick");
/// ```
pub fn namespace(name: &str) -> &str {
    name.split_once('.').map_or(name, |(_, ns)| ns)
}

/// Whether `value` nests lists and maps deeper than [`Value::MAX_NESTING`] (what its `Display`
/// writes as `…`); a walk with a stack of its own, never recursion.
fn nested_deeper_than_limit(value: &Value) -> bool {
    let mut stack = vec![(value, 0_usize)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::List(_) | Value::Map(_) if depth >= Value::MAX_NESTING => return true,
            Value::List(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Map(map) => stack.extend(map.iter().map(|(_, item)| (item, depth + 1))),
            _ => {}
        }
    }
    false
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One trace: the recorded events sharing a trace id, in the order they finished.
#[derive(Clone, Debug)]
pub struct Trace {
    pub(crate) trace_id: TraceId,
    pub(crate) events: Vec<TraceEvent>,
    pub(crate) dropped: u64,
    pub(crate) complete: bool,
}

impl Trace {
    /// The trace id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The events, in the order they finished (the root last, unless events came after it).
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Events of this trace left out because it had [`WebOptions::events_per_trace`](crate::WebOptions::events_per_trace) already.
    pub fn dropped_events(&self) -> u64 {
        self.dropped
    }

    /// Whether the root has finished: the event without a parent arrived, or, for a trace whose
    /// local root has a parent in another process, no event arrived for
    /// [`WebOptions::remote_root_wait`](crate::WebOptions::remote_root_wait).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The W3C `tracestate` of the trace: its root's when it has one, else the first event's
    /// that has one (`None` when no event carried one).
    pub fn trace_state(&self) -> Option<&notify_core::trace_context::TraceState> {
        fn of(e: &TraceEvent) -> Option<&notify_core::trace_context::TraceState> {
            (!e.trace_state.is_empty()).then_some(&e.trace_state)
        }
        self.root().and_then(of).or_else(|| self.events.iter().find_map(of))
    }

    /// The root event: the last finished event without a parent; without one (the local root
    /// of a trace continued from another process), the last finished event whose parent is not
    /// in the trace. `None` only for a trace without events.
    pub fn root(&self) -> Option<&TraceEvent> {
        if let Some(root) = self.events.iter().rev().find(|e| e.is_local_root()) {
            return Some(root);
        }
        let ids: std::collections::HashSet<EventId> = self.events.iter().map(|e| e.id).collect();
        self.events
            .iter()
            .rev()
            .find(|e| e.parent_id.is_some_and(|parent| !ids.contains(&parent)))
    }

    /// When the trace started: the earliest start of its events.
    pub fn start(&self) -> Option<Instant> {
        self.events.iter().map(|e| e.start).min()
    }

    /// The wall-clock time of [`Trace::start`].
    pub fn start_time(&self) -> Option<SystemTime> {
        self.events.iter().map(|e| e.start_time).min()
    }

    /// From the earliest start to the latest end of its events.
    pub fn duration(&self) -> Duration {
        let Some(start) = self.start() else {
            return Duration::ZERO;
        };
        self.events
            .iter()
            .map(|e| (e.start + e.duration).saturating_duration_since(start))
            .max()
            .unwrap_or_default()
    }

    /// The events in display order: depth-first from the roots, children by start time, with
    /// their depth (0 for a root, and for an event whose parent is not in the trace).
    pub fn tree(&self) -> Vec<(usize, &TraceEvent)> {
        let mut order: Vec<usize> = (0..self.events.len()).collect();
        order.sort_by_key(|&i| (self.events[i].start, i));
        let ids: std::collections::HashSet<EventId> = self.events.iter().map(|e| e.id).collect();
        let mut children: std::collections::HashMap<EventId, Vec<usize>> = std::collections::HashMap::new();
        let mut roots = Vec::new();
        for &i in &order {
            match self.events[i].parent_id {
                Some(parent) if ids.contains(&parent) && parent != self.events[i].id => {
                    children.entry(parent).or_default().push(i)
                }
                _ => roots.push(i),
            }
        }
        let mut out = Vec::with_capacity(self.events.len());
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (0, i)).collect();
        let mut seen = vec![false; self.events.len()];
        while let Some((depth, i)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            out.push((depth, &self.events[i]));
            if let Some(kids) = children.get(&self.events[i].id) {
                stack.extend(kids.iter().rev().map(|&k| (depth + 1, k)));
            }
        }
        // Events in a parent cycle (ids reused by an importer, say) are shown as roots.
        for &i in &order {
            if !seen[i] {
                out.push((0, &self.events[i]));
            }
        }
        out
    }

    /// The bytes its events take (see [`TraceEvent::memory_bytes`]).
    pub fn memory_bytes(&self) -> usize {
        self.events.iter().map(TraceEvent::memory_bytes).sum()
    }
}
