//! [`TracingForwarder`]: notify events as tracing spans or events (notify -> tracing).

use std::sync::Arc;
use std::time::Duration;

use notify_core::{
    context::EventContext, event::EventId, subscriber::EventedOptions, Event, EventedSubscriber, Notifier, Pattern,
    Payload, SilenceableSubscriber, Subscriber, Subscription,
};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tracing::{Level, Span};
use tracing_core::field::{self, Value as TracingValue};
use tracing_core::Metadata;

use crate::dyn_sites::{registry, DynSite, DURATION_FIELD};
use crate::open::{FieldValue, Open};
use crate::reentry;
use crate::sync_spans::{self, SyncOpen};

/// A notify subscriber that re-emits events into `tracing`, so tracing-subscriber's fmt and JSON
/// layers, `tracing-opentelemetry` and any other tracing subscriber show them.
///
/// **Spans** (the default): each event is a tracing span
/// * named by the event name's method and targeted at its namespace (`"query.sql"` → span
///   `query`, target `sql`; a name without a dot gets target `notify`), at the configured level
///   (default `INFO`);
/// * with the payload as fields: integers, floats, booleans and strings as such, anything else as
///   its `Display` text; keys the block adds before finish are recorded on the span at finish
///   (see below; a value the block replaces, or a key it removes, is not reflected), plus
///   [`BRIDGE_FIELD`](crate::BRIDGE_FIELD) = the notify event id;
/// * whose parent is the innermost unfinished of either API: the tracing span current on the
///   thread when the event starts if the span of the event's notify parent is entered on this
///   thread (a synchronous bridged event of this thread, or an async one whose future is being
///   polled here: then the current span is that span or a tracing span entered inside it), else
///   the span of the event's notify parent when that event is bridged (a context attached from
///   another thread or task), else the tracing span current on the thread;
/// * entered for exactly as long as the event is current: a synchronous event from start to
///   finish, an async event (instrumented future, `async fn` under `#[instrument_event]`) around
///   each poll, on the polling thread — so concurrent tasks never nest under each other;
/// * closed when the event finishes.
///
/// **Threads.** tracing keeps the entered spans per thread, and only the thread that entered a
/// span can exit it. A span is entered exactly while its event is current on a thread: the block
/// of `instrument` or of an `#[instrument_event]` function, each poll of an instrumented future,
/// and the scopes of a started [`Handle`](notify_core::Handle) (`Handle::enter`, a `!Send`
/// guard, and `Handle::in_scope`). A started handle is not current outside its scopes, so moving
/// it to another thread and finishing it there leaves no span entered anywhere. A thread keeps at
/// most 256 entered spans; past that the oldest is exited and closed.
///
/// **Events** ([`TracingForwarder::events_at_finish`]): each notify event is one tracing event at
/// finish, with every payload entry and `notify.duration_ns`, parented to the tracing span current
/// on the finishing thread.
///
/// **Published events** ([`Notifier::publish_event`](notify_core::Notifier::publish_event), e.g.
/// imported from another process by notify-nats): one tracing event each, with
/// `notify.duration_ns`, in both modes (a tracing span cannot be given times in the past).
///
/// tracing declares a span's fields when it is created, so the bridge makes one tracing callsite
/// per event name with the payload keys seen so far, widened when a new key shows up; the first
/// event that adds a key only at finish cannot show it on its span (later ones do). At most 4,096
/// callsites are made; events past that share one overflow callsite (target `notify`, name
/// `event`, fields `notify.name` and `notify.payload`).
///
/// It is a *silenceable* subscriber: while the current tracing subscriber does not want the
/// callsite of an event name (its interest is never, or `enabled` says no: a global filter by
/// level or target), the event costs what an unlistened one costs. Per-layer filters
/// (`layer.with_filter(…)`) do not silence it: tracing's `enabled` stays true for them. Events
/// published by [`NotifyLayer`](crate::NotifyLayer) (they came from tracing) are skipped, so both
/// directions can be installed.
///
/// ```
/// use notify_core::{Notifier, Payload};
/// use notify_tracing::TracingForwarder;
///
/// let notifier = Notifier::new();
/// let _subscription = TracingForwarder::new().subscribe(&notifier, notify_core::Pattern::glob("*.sql")?);
/// // With a fmt subscriber installed: an INFO span `query` of target `sql` with field table="books".
/// notifier.instrument("query.sql", || Payload::new().with("table", "books"), |_| ());
/// # Ok::<(), notify_core::PatternError>(())
/// ```
#[derive(Clone)]
pub struct TracingForwarder {
    inner: Arc<Inner>,
}

struct Inner {
    level: Level,
    spans: bool,
    open: OpenSpans,
}

impl Default for TracingForwarder {
    fn default() -> TracingForwarder {
        TracingForwarder::new()
    }
}

impl TracingForwarder {
    /// Spans at level `INFO`.
    pub fn new() -> TracingForwarder {
        TracingForwarder {
            inner: Arc::new(Inner {
                level: Level::INFO,
                spans: true,
                open: OpenSpans::default(),
            }),
        }
    }

    /// Spans (or events) at `level`.
    ///
    /// ```
    /// let s = notify_tracing::TracingForwarder::new().level(tracing::Level::DEBUG);
    /// # let _ = s;
    /// ```
    #[must_use]
    pub fn level(self, level: Level) -> TracingForwarder {
        TracingForwarder {
            inner: Arc::new(Inner {
                level,
                spans: self.inner.spans,
                open: OpenSpans::default(),
            }),
        }
    }

    /// One tracing event per notify event, at finish, instead of a span.
    #[must_use]
    pub fn events_at_finish(self) -> TracingForwarder {
        TracingForwarder {
            inner: Arc::new(Inner {
                level: self.inner.level,
                spans: false,
                open: OpenSpans::default(),
            }),
        }
    }

    /// Subscribes this bridge to the events `pattern` matches on `notifier`.
    pub fn subscribe(self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        notifier.subscribe(pattern, Subscriber::from(self))
    }

    /// How many bridged spans are open now (started, not finished): those of async events, and
    /// those of synchronous events on the calling thread. The spans of this thread's events
    /// finished on other threads are closed first (see "Threads" above).
    pub fn open_spans(&self) -> usize {
        sync_spans::claim_orphans();
        let owner = self.owner();
        self.inner.open.len() + sync_spans::count(owner)
    }
}

impl From<TracingForwarder> for Subscriber {
    /// A silenceable subscriber labelled `"tracing"` (asking for durations in events mode).
    fn from(bridge: TracingForwarder) -> Subscriber {
        let options = EventedOptions {
            duration: !bridge.inner.spans,
        };
        Subscriber::silenceable_with(options, bridge).named("tracing")
    }
}

/// Open spans of async events (not entered at start, so they may move between threads), by notify
/// event id, in shards.
struct OpenSpans {
    shards: Box<[Mutex<FxHashMap<EventId, Open>>]>,
}

const SHARDS: usize = 16;

impl Default for OpenSpans {
    fn default() -> OpenSpans {
        OpenSpans {
            shards: (0..SHARDS).map(|_| Mutex::new(FxHashMap::default())).collect(),
        }
    }
}

impl OpenSpans {
    fn shard(&self, event: EventId) -> &Mutex<FxHashMap<EventId, Open>> {
        &self.shards[(event.get() as usize) % SHARDS]
    }

    /// A handle on the span of async event `event` (the shard lock is not held while it is used).
    fn span(&self, event: EventId) -> Option<Span> {
        self.shard(event).lock().get(&event).map(|open| open.span.clone())
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

/// Calls `f` with the metadata of `site` and the values of its fields for an event.
fn with_values<T>(
    site: &'static DynSite,
    name: &str,
    event_id: EventId,
    duration_ns: Option<u64>,
    payload: &Payload,
    f: impl FnOnce(&'static Metadata<'static>, &field::ValueSet<'_>) -> T,
) -> T {
    let meta = site.meta();
    let event_id = event_id.get();
    if site.overflow {
        let text = format!("{payload:?}");
        let text = text.as_str();
        let values: [Option<&dyn TracingValue>; 4] = [
            Some(&event_id),
            duration_ns.as_ref().map(|d| d as &dyn TracingValue),
            Some(&name),
            Some(&text),
        ];
        return f(meta, &meta.fields().value_set_all(&values));
    }
    let keys = site.keys();
    let has_duration = meta.fields().field(DURATION_FIELD).is_some();
    // The payload's values of the callsite's keys (`holders`), then the field values (`values`:
    // the event id, the duration when declared, then those), on the stack for up to
    // `INLINE_KEYS` keys, else in `Vec`s.
    let (mut inline_holders, mut spilled_holders) = ([const { None }; INLINE_KEYS], Vec::new());
    let holders: &mut [Option<FieldValue<'_>>] = if keys.len() <= INLINE_KEYS {
        &mut inline_holders[..keys.len()]
    } else {
        spilled_holders.resize_with(keys.len(), || None);
        &mut spilled_holders
    };
    for (holder, key) in holders.iter_mut().zip(keys) {
        *holder = payload.get(key).map(FieldValue::of);
    }
    let len = 1 + usize::from(has_duration) + keys.len();
    let (mut inline_values, mut spilled_values) = ([None; INLINE_KEYS + 2], Vec::new());
    let values: &mut [Option<&dyn TracingValue>] = if len <= INLINE_KEYS + 2 {
        &mut inline_values[..len]
    } else {
        spilled_values.resize(len, None);
        &mut spilled_values
    };
    values[0] = Some(&event_id);
    if has_duration {
        values[1] = duration_ns.as_ref().map(|d| d as &dyn TracingValue);
    }
    for (value, holder) in values[len - keys.len()..].iter_mut().zip(&*holders) {
        *value = holder.as_ref().map(FieldValue::as_value);
    }
    f(meta, &meta.fields().value_set_all(values))
}

/// Payload keys of a callsite whose field values are gathered on the stack (more: in a `Vec`).
const INLINE_KEYS: usize = 8;

impl EventedSubscriber for TracingForwarder {
    fn start(&self, name: &str, event: &EventContext, payload: &Payload) {
        let inner = &*self.inner;
        if !inner.spans || reentry::is_publishing() {
            return;
        }
        sync_spans::claim_orphans();
        let site = registry().site(name, true, inner.level, payload);
        if !site.is_enabled() {
            return;
        }
        // One parent rule (issue 35, item 3): when the parent's span is entered on this thread (a
        // synchronous event's, or an async event's during its poll), tracing's current span is
        // that span or one entered inside it, the innermost unfinished of either API: take it
        // (contextual parent). Otherwise (a context attached from elsewhere) the parent's span,
        // wherever it is open.
        let parent = match event.parent_id() {
            Some(parent)
                if sync_spans::span_id(self.owner(), parent).is_some() || entered::is_entered(self.owner(), parent) =>
            {
                None
            }
            // A task spawned with the notify context (`in_current_context`) and tracing's
            // (`in_current_span`): when tracing's current span is the parent's span or inside it,
            // it is the innermost; only a registry can tell (its span ancestry).
            Some(parent) => self
                .inner
                .open
                .span(parent)
                .filter(|span| !current_span_is_within(span))
                .and_then(|span| span.id()),
            None => None,
        };
        let span = with_values(site, name, event.id(), None, payload, |meta, values| match parent {
            Some(parent) => Span::child_of(parent, meta, values),
            None => Span::new(meta, values),
        });
        if span.is_disabled() {
            return;
        }
        let open = Open {
            span,
            site,
            started: payload.len(),
        };
        // A synchronous event is this thread's current event from its start: enter its span now
        // and keep it on this thread. An async one is not current until polled, and gets
        // `enter`/`exit` per poll, on whatever thread polls it.
        if notify_core::context::current_event_id() == Some(event.id()) {
            open.enter();
            sync_spans::push(SyncOpen {
                owner: self.owner(),
                event: event.id(),
                open,
            });
        } else {
            inner.open.shard(event.id()).lock().insert(event.id(), open);
        }
    }

    fn enter(&self, _name: &str, event: &EventContext) {
        if let Some(span) = self.inner.open.span(event.id()) {
            span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
            entered::push(self.owner(), event.id());
        }
    }

    fn exit(&self, _name: &str, event: &EventContext) {
        if let Some(span) = self.inner.open.span(event.id()) {
            entered::pop(self.owner(), event.id());
            span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
        }
    }

    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        let inner = &*self.inner;
        if reentry::is_publishing() {
            return;
        }
        if !inner.spans {
            emit_event(inner.level, name, event.id(), event.duration(), payload);
            return;
        }
        sync_spans::claim_orphans();
        let owner = self.owner();
        let (open, entered) = match sync_spans::take(owner, event.id()) {
            Some(open) => (open, true),
            None => match inner.open.shard(event.id()).lock().remove(&event.id()) {
                Some(open) => (open, false),
                None => {
                    if event.finished_on_another_thread() {
                        // A handle moved here: its span is entered on the thread that started it,
                        // and only that thread can exit it.
                        sync_spans::orphan(owner, event.id(), payload);
                    }
                    return;
                }
            },
        };
        if open.finish(payload, entered) {
            // Declare the new keys for the next events of this name.
            registry().site(name, true, inner.level, payload);
        }
    }

    /// An event published whole (imported from another process by notify-nats, or given to
    /// `publish`/`publish_event`) is one tracing event with `notify.duration_ns`, in both modes:
    /// a tracing span cannot be given times in the past.
    fn publish(&self, event: &Event) {
        if reentry::is_publishing() {
            return;
        }
        let duration = Some(event.duration());
        emit_event(self.inner.level, event.name(), event.id(), duration, event.payload());
    }
}

impl TracingForwarder {
    fn owner(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }
}

/// Whether the current span of `span`'s subscriber on this thread is `span` or a descendant of
/// it, as a tracing-subscriber [`Registry`](tracing_subscriber::Registry) records the ancestry
/// (false with another subscriber: it cannot tell).
fn current_span_is_within(span: &Span) -> bool {
    use tracing_subscriber::registry::LookupSpan;
    span.with_subscriber(|(ancestor, dispatch)| {
        let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>() else {
            return false;
        };
        let current = dispatch.current_span();
        let mut next = current.id().and_then(|id| registry.span(id));
        while let Some(span) = next {
            if span.id() == *ancestor {
                return true;
            }
            next = span.parent();
        }
        false
    })
    .unwrap_or(false)
}

/// The async events whose spans are entered on this thread now (during a poll of their future),
/// innermost last: a child event started inside such a poll takes tracing's current span as its
/// parent, which is that span or a tracing span entered inside it (the innermost of either API).
mod entered {
    use std::cell::RefCell;

    use notify_core::event::EventId;

    thread_local! {
        static ENTERED: RefCell<Vec<(usize, EventId)>> = const { RefCell::new(Vec::new()) };
    }

    /// `event`'s span (of bridge `owner`) was entered on this thread.
    pub(super) fn push(owner: usize, event: EventId) {
        let _ = ENTERED.try_with(|entered| entered.borrow_mut().push((owner, event)));
    }

    /// `event`'s span was exited on this thread (the innermost entry of it goes).
    pub(super) fn pop(owner: usize, event: EventId) {
        let _ = ENTERED.try_with(|entered| {
            let mut entered = entered.borrow_mut();
            if let Some(at) = entered.iter().rposition(|&e| e == (owner, event)) {
                entered.remove(at);
            }
        });
    }

    /// Whether `event`'s span (of bridge `owner`) is entered on this thread now.
    pub(super) fn is_entered(owner: usize, event: EventId) -> bool {
        ENTERED
            .try_with(|entered| entered.borrow().iter().rev().any(|&e| e == (owner, event)))
            .unwrap_or(false)
    }
}

/// The tracing event of a finished notify event (events mode, and published events).
fn emit_event(level: Level, name: &str, id: EventId, duration: Option<Duration>, payload: &Payload) {
    let site = registry().site(name, false, level, payload);
    if !site.is_enabled() {
        return;
    }
    let duration = duration.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    with_values(site, name, id, duration, payload, |meta, values| {
        tracing_core::Event::dispatch(meta, values);
    });
}

impl SilenceableSubscriber for TracingForwarder {
    fn silenced(&self, name: &str) -> bool {
        registry()
            .existing(name, self.inner.spans, self.inner.level)
            .is_some_and(|site| !site.is_enabled())
    }
}

impl std::fmt::Debug for TracingForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingForwarder")
            .field("level", &self.inner.level)
            .field("spans", &self.inner.spans)
            .field("open_spans", &self.open_spans())
            .finish()
    }
}
