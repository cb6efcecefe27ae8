//! Tail sampling in-process ([`TailSampler`]): hold each trace's events until its local root
//! ends, then keep the trace whole or drop it whole.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::event::{Event, Outcome};
use crate::event_id::EventId;
use crate::payload::EXCEPTION_KEY;
use crate::trace_id::TraceId;

/// What a [`TailSampler`] keeps and how much it may hold.
#[derive(Clone, Debug, PartialEq)]
pub struct TailSampling {
    slower_than: Option<Duration>,
    ratio: f64,
    max_traces: usize,
    max_events_per_trace: usize,
    max_wait: Duration,
}

impl Default for TailSampling {
    fn default() -> TailSampling {
        TailSampling::new()
    }
}

impl TailSampling {
    /// Keep traces with an error only: no slow threshold, ratio 0; at most 10,000 traces of at
    /// most 1,000 events held, each at most 30 s.
    pub fn new() -> TailSampling {
        TailSampling {
            slower_than: None,
            ratio: 0.0,
            max_traces: 10_000,
            max_events_per_trace: 1_000,
            max_wait: Duration::from_secs(30),
        }
    }

    /// Also keep traces whose local root lasted at least `threshold`.
    pub fn slower_than(mut self, threshold: Duration) -> TailSampling {
        self.slower_than = Some(threshold);
        self
    }

    /// Also keep this fraction of the other traces, chosen by trace id (clamped to 0..=1; NaN is 0).
    pub fn ratio(mut self, ratio: f64) -> TailSampling {
        self.ratio = if ratio.is_nan() { 0.0 } else { ratio.clamp(0.0, 1.0) };
        self
    }

    /// At most `traces` traces held at once (at least 1).
    pub fn max_traces(mut self, traces: usize) -> TailSampling {
        self.max_traces = traces.max(1);
        self
    }

    /// At most `events` events held per trace, the root not counted (at least 1).
    pub fn max_events_per_trace(mut self, events: usize) -> TailSampling {
        self.max_events_per_trace = events.max(1);
        self
    }

    /// How long a trace may wait for its root after its first event arrived.
    pub fn max_wait(mut self, wait: Duration) -> TailSampling {
        self.max_wait = wait;
        self
    }

    /// Whether the ratio keeps `trace`: OpenTelemetry's `TraceIdRatioBased` test (the trace id's
    /// low 64 bits, shifted right once, below `ratio * 2^63`).
    ///
    /// ```
    /// use notify_core::export::TailSampling;
    /// let trace = notify_core::TraceId::new(0x1234).unwrap();
    /// assert!(TailSampling::new().ratio(1.0).ratio_keeps(trace));
    /// assert!(!TailSampling::new().ratio(0.0).ratio_keeps(trace));
    /// ```
    pub fn ratio_keeps(&self, trace: TraceId) -> bool {
        if self.ratio >= 1.0 {
            return true;
        }
        let bound = (self.ratio * (1_u64 << 63) as f64) as u64;
        let low = trace.get() as u64;
        (low >> 1) < bound
    }

    /// Whether a [`TailSampler`] with this policy keeps the trace of `event` whatever the trace's
    /// other events are: `event` is an error ([`is_error`]), or it is its trace's local root and
    /// lasted at least [`slower_than`](Self::slower_than), or the trace id falls in the
    /// [`ratio`](Self::ratio). False does not mean dropped (another event of the trace may be an
    /// error); true means the decision is "keep" (the sampler's bounds, counted in [`TailStats`],
    /// may still drop events of it). What a metric needs before it points to a trace, as an
    /// exemplar does, that only the tail-sampling exporter will decide later.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use notify_core::export::TailSampling;
    /// use notify_core::{Event, Payload};
    /// let policy = TailSampling::new().slower_than(Duration::from_millis(100));
    /// let now = Instant::now();
    /// let fast = Event::new("request.http", now, now, Payload::new());
    /// let slow = Event::new("request.http", now, now + Duration::from_millis(150), Payload::new());
    /// assert!(!policy.keeps_for_sure(&fast));
    /// assert!(policy.keeps_for_sure(&slow));
    /// let mut failed = Payload::new();
    /// failed.record_error(&std::fmt::Error);
    /// assert!(policy.keeps_for_sure(&Event::new("request.http", now, now, failed)));
    /// ```
    pub fn keeps_for_sure(&self, event: &Event) -> bool {
        is_error(event)
            || (is_local_root(event) && self.slower_than.is_some_and(|threshold| event.duration() >= threshold))
            || self.ratio_keeps(event.trace_id())
    }
}

/// Counters of a [`TailSampler`]: traces by decision, events by fate. Exact: every event offered
/// is kept (`kept`), held (`held`) or in exactly one `dropped_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TailStats {
    /// Decisions to keep (a trace, or a later part of a trace dropped before) for an error.
    pub traces_kept_error: u64,
    /// Decisions to keep because the deciding root was slow (and nothing held had an error).
    pub traces_kept_slow: u64,
    /// Decisions to keep by the ratio.
    pub traces_kept_ratio: u64,
    /// Traces dropped by the decision of a local root (counted once per trace: later parts of
    /// the trace dropped too count their events in `dropped_late`).
    pub traces_dropped: u64,
    /// Traces evicted because `max_traces` were held.
    pub traces_evicted: u64,
    /// Decisions made without a root after `max_wait` (kept or not; a later part of a trace
    /// dropped before, dropped again on expiry, is not counted again).
    pub traces_expired: u64,
    /// Events handed on to the sink.
    pub kept: u64,
    /// Of `kept`, those kept at once because their trace had already been decided kept (events
    /// that finish after their root, such as a detached task's).
    pub kept_late: u64,
    /// Events of the part of a trace a local root's decision dropped (the root's own events,
    /// see [`TailSampler`]'s rule).
    pub dropped_not_sampled: u64,
    /// Events of evicted traces (held then, or arriving later without an error).
    pub dropped_evicted: u64,
    /// Events beyond `max_events_per_trace`.
    pub dropped_over_limit: u64,
    /// Events of traces that expired without their root and were not kept.
    pub dropped_expired: u64,
    /// Events dropped after their trace had already been decided dropped: those of a later part
    /// of the trace that was not kept either (by its own local root, or on expiry), and children
    /// of a dropped root that finish after it without an error.
    pub dropped_late: u64,
    /// Events held now.
    pub held: u64,
}

impl TailStats {
    /// All dropped events, whatever the cause.
    pub fn dropped(&self) -> u64 {
        self.dropped_not_sampled
            + self.dropped_evicted
            + self.dropped_over_limit
            + self.dropped_expired
            + self.dropped_late
    }

    /// Events offered so far: kept + dropped + held.
    pub fn offered(&self) -> u64 {
        self.kept + self.dropped() + self.held
    }
}

/// What was decided for a trace, remembered for its late events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// Kept: later events are kept at once.
    Kept,
    /// Dropped (by a local root, whose id is kept, or on expiry): later events are held again as
    /// a new part of the trace, but children of that root without an error are dropped at once.
    Dropped(Option<EventId>),
    /// Evicted: later events are dropped, unless they are errors.
    Evicted,
}

/// Why a part of a trace is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeepCause {
    Error,
    Slow,
    Ratio,
}

/// One trace being held (or the part of it not decided yet).
struct Held {
    events: Vec<Arc<Event>>,
    /// Its key in `TailSampler::by_age`.
    seq: u64,
    first: Instant,
    error: bool,
    /// The trace was already decided dropped (and counted so) before these events were decided.
    after_drop: bool,
}

/// The tail-sampling stage: holds each trace's events until its local root ends, then keeps the
/// trace whole or drops the root's part of it.
///
/// A `TailSampler` is a plain data structure that an exporter's own thread feeds with finished
/// events ([`TailSampler::offer`]) and ticks ([`TailSampler::expire`], when
/// [`TailSampler::next_expiry`] is due); the events it keeps come out in the `kept` vector, ready
/// for the sink. It takes `Arc<Event>` (what an owned-event subscriber receives) and knows nothing
/// of any sink.
///
/// **The decision**, made when a *local root* (an event without a parent in this process: no
/// parent, or a remote one) arrives: keep every event of its trace still held when any of them,
/// or the root, is an error ([`is_error`]: an [`EXCEPTION_KEY`] entry in the payload, or an
/// outcome other than `completed`), else when the root took at least
/// [`TailSampling::slower_than`], else when the trace id falls in [`TailSampling::ratio`]
/// (OpenTelemetry's `TraceIdRatioBased` arithmetic on the trace id's low 64 bits, so every process
/// decides a trace alike); otherwise drop the root and the held events below it.
///
/// **A trace with several local roots** (a caller that calls this service twice in one trace, a
/// retry, a message delivered twice) is decided part by part, each local root deciding its own, so
/// that no decision drops an error or a slow root that comes after it:
/// * a keep is final: the trace's later events are kept at once (`kept_late`);
/// * a drop takes the root and the held events below it (`dropped_not_sampled`) and nothing else:
///   held events of the trace that are not below that root (another request of the same trace
///   still running) stay held, and events that arrive later are held again, as a new part that
///   the next local root of the trace decides by the same rule (an error, a slow root); a part
///   that is dropped too counts its events `dropped_late`;
/// * an event whose parent is a dropped root (a detached task that finishes after its root) has
///   no root to wait for: it is dropped at once (`dropped_late`), or, when it is an error, kept at
///   once with every event of its trace still held, and the trace is then kept;
/// * what a drop took is gone: an error keeps what is still held and what comes after it, never
///   what was dropped before it arrived;
/// * an eviction (below) is final for events without an error (`dropped_evicted`); an error of an
///   evicted trace is kept at once, and the trace is then kept.
///
/// The ratio decides a trace id alike every time, so it never keeps a later part of a trace it
/// dropped. Trace counters count decisions: a trace counts once among `traces_dropped`,
/// `traces_expired` or `traces_evicted` for its first drop, and a later part of it that is kept
/// counts in `traces_kept_*` too.
///
/// **Bounds**, each drop counted by cause in [`TailStats`]:
/// * at most `max_traces` traces held: a new trace beyond that evicts the one held longest
///   (its events, and later ones of that trace, are `dropped_evicted`);
/// * at most `max_events_per_trace` events held per trace (the root always gets in to decide):
///   further ones are `dropped_over_limit`;
/// * a trace (or a later part of one) whose root has not arrived `max_wait` after its first event
///   is decided without it (kept on an error or by the ratio, else `dropped_expired`, or
///   `dropped_late` for a later part);
/// * decisions are remembered for the last `4 * max_traces` traces, so events that finish after
///   their root (a detached task) follow the rule above; an event of a forgotten trace starts a
///   new one.
///
/// Memory is bounded by `max_traces * (max_events_per_trace + 1)` shared events plus
/// `4 * max_traces` remembered decisions (a trace id, a decision and the dropped root's event id
/// each).
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use notify_core::export::{TailSampler, TailSampling};
/// use notify_core::{Event, Payload};
///
/// let mut sampler = TailSampler::new(TailSampling::new().slower_than(Duration::from_millis(100)).ratio(0.0));
/// let now = Instant::now();
/// let mut kept = Vec::new();
/// // A fast root with no error: dropped.
/// sampler.offer(Arc::new(Event::new("request.http", now, now, Payload::new())), now, &mut kept);
/// // A slow one: kept.
/// let slow = Event::new("request.http", now, now + Duration::from_millis(150), Payload::new());
/// sampler.offer(Arc::new(slow), now, &mut kept);
/// assert_eq!(kept.len(), 1);
/// assert_eq!(sampler.stats().traces_kept_slow, 1);
/// assert_eq!(sampler.stats().dropped_not_sampled, 1);
/// ```
pub struct TailSampler {
    config: TailSampling,
    held: HashMap<TraceId, Held>,
    /// Held traces by arrival of their first event (`seq` grows with it).
    by_age: BTreeMap<u64, TraceId>,
    next_seq: u64,
    decided: HashMap<TraceId, Decision>,
    decided_order: VecDeque<TraceId>,
    stats: TailStats,
}

impl std::fmt::Debug for TailSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailSampler")
            .field("config", &self.config)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Whether `event` is an error for tail sampling: an exception in the payload, or an outcome other
/// than `completed` (panicked, cancelled).
pub fn is_error(event: &Event) -> bool {
    event.outcome() != Outcome::Completed || event.payload().contains_key(EXCEPTION_KEY)
}

/// Whether `event` is the root of its trace in this process: no parent, or a parent in another
/// process (a remote parent, read from a W3C `traceparent`).
fn is_local_root(event: &Event) -> bool {
    event.parent_id().is_none() || event.parent_is_remote()
}

impl TailSampler {
    /// A sampler with `config`, holding nothing.
    pub fn new(config: TailSampling) -> TailSampler {
        TailSampler {
            config,
            held: HashMap::new(),
            by_age: BTreeMap::new(),
            next_seq: 0,
            decided: HashMap::new(),
            decided_order: VecDeque::new(),
            stats: TailStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> TailStats {
        self.stats
    }

    /// Traces held now.
    pub fn traces_held(&self) -> usize {
        self.held.len()
    }

    /// The configuration.
    pub fn config(&self) -> &TailSampling {
        &self.config
    }

    /// When the trace held longest reaches `max_wait` (when [`expire`](Self::expire) will decide
    /// it); `None` when nothing is held, or when `max_wait` is so long that the time is past what an
    /// `Instant` holds (`Duration::MAX`: never). An exporter thread that sleeps until work arrives wakes
    /// by then at the latest.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use notify_core::export::{TailSampler, TailSampling};
    /// use notify_core::{Event, Notifier, Payload, Pattern, Subscriber};
    ///
    /// let mut sampler = TailSampler::new(TailSampling::new().max_wait(Duration::from_secs(2)));
    /// assert_eq!(sampler.next_expiry(), None);
    /// // A child event whose root has not finished yet.
    /// let notifier = Notifier::new();
    /// let _s = notifier.subscribe(Pattern::all(), Subscriber::event(|_: &Event| {}));
    /// let now = Instant::now();
    /// let child = notifier.instrument("root.doc", Payload::new, |_| Event::new("child.doc", now, now, Payload::new()));
    /// assert!(child.parent_id().is_some());
    /// sampler.offer(Arc::new(child), now, &mut Vec::new());
    /// assert_eq!(sampler.next_expiry(), Some(now + Duration::from_secs(2)));
    /// ```
    pub fn next_expiry(&self) -> Option<Instant> {
        let (_, trace) = self.by_age.first_key_value()?;
        let first = self.held.get(trace)?.first;
        first.checked_add(self.config.max_wait)
    }

    /// Takes one finished event that arrived at `now`; pushes onto `kept` what is now decided kept
    /// (this event alone, or the held events of its trace when this is a local root or an error
    /// that keeps them; see the rule on [`TailSampler`]).
    pub fn offer(&mut self, event: Arc<Event>, now: Instant, kept: &mut Vec<Arc<Event>>) {
        let trace = event.trace_id();
        let root = is_local_root(&event);
        let mut after_drop = false;
        if let Some(&decision) = self.decided.get(&trace) {
            match decision {
                Decision::Kept => {
                    self.stats.kept += 1;
                    self.stats.kept_late += 1;
                    kept.push(event);
                    return;
                }
                Decision::Evicted => {
                    if is_error(&event) {
                        self.keep_error_at_once(trace, event, kept);
                    } else {
                        self.stats.dropped_evicted += 1;
                    }
                    return;
                }
                // A child of the dropped root has no root left to wait for.
                Decision::Dropped(Some(dropped)) if !root && event.parent_id() == Some(dropped) => {
                    if is_error(&event) {
                        self.keep_error_at_once(trace, event, kept);
                    } else {
                        self.stats.dropped_late += 1;
                    }
                    return;
                }
                // Anything else starts (or joins) a later part of the trace, held for its root.
                Decision::Dropped(_) => after_drop = true,
            }
        }
        let error = is_error(&event);
        // One lookup of the trace (the maps hash with SipHash: it is most of the cost).
        match self.held.entry(trace) {
            Entry::Occupied(mut entry) => {
                let held = entry.get_mut();
                if !root {
                    if held.events.len() >= self.config.max_events_per_trace {
                        self.stats.dropped_over_limit += 1;
                        return;
                    }
                    held.error |= error;
                    held.events.push(event);
                    self.stats.held += 1;
                    return;
                }
                let held = entry.remove();
                self.by_age.remove(&held.seq);
                self.stats.held -= held.events.len() as u64;
                let rest = self.decide_root(trace, held.events, held.error, held.after_drop, event, kept);
                if !rest.is_empty() {
                    // Events of another root of the trace, still running: they wait for it.
                    self.stats.held += rest.len() as u64;
                    self.by_age.insert(held.seq, trace);
                    self.held.insert(
                        trace,
                        Held {
                            events: rest,
                            seq: held.seq,
                            first: held.first,
                            error: false,
                            after_drop: true,
                        },
                    );
                }
            }
            Entry::Vacant(entry) => {
                if root {
                    // A trace of one event (or whose root came first): decide at once.
                    self.decide_root(trace, Vec::new(), false, after_drop, event, kept);
                    return;
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                entry.insert(Held {
                    events: vec![event],
                    seq,
                    first: now,
                    error,
                    after_drop,
                });
                self.stats.held += 1;
                self.by_age.insert(seq, trace);
                // Past `max_traces` the trace held longest goes (never this one: it is the newest).
                if self.held.len() > self.config.max_traces {
                    self.evict_oldest();
                }
            }
        }
    }

    /// Decides the traces that waited longer than `max_wait` for their root (kept on an error or
    /// by the ratio, else dropped as expired).
    pub fn expire(&mut self, now: Instant, kept: &mut Vec<Arc<Event>>) {
        while let Some((&seq, &trace)) = self.by_age.first_key_value() {
            let held = &self.held[&trace];
            if now.saturating_duration_since(held.first) < self.config.max_wait {
                break;
            }
            self.by_age.remove(&seq);
            let held = self.held.remove(&trace).expect("indexed");
            self.decide_rootless(trace, held, kept);
        }
    }

    /// Decides every held trace now, as [`expire`](Self::expire) would (at shutdown).
    pub fn finish(&mut self, kept: &mut Vec<Arc<Event>>) {
        while let Some((_, trace)) = self.by_age.pop_first() {
            let held = self.held.remove(&trace).expect("indexed");
            self.decide_rootless(trace, held, kept);
        }
    }

    /// Why the part of `trace` being decided is kept, if it is: `error` when one of its events
    /// is an error, `root` when its local root arrived.
    fn keep_cause(&self, trace: TraceId, error: bool, root: Option<&Event>) -> Option<KeepCause> {
        let slow = match (self.config.slower_than, root) {
            (Some(threshold), Some(root)) => root.duration() >= threshold,
            _ => false,
        };
        if error {
            Some(KeepCause::Error)
        } else if slow {
            Some(KeepCause::Slow)
        } else if self.config.ratio_keeps(trace) {
            Some(KeepCause::Ratio)
        } else {
            None
        }
    }

    /// Decides the part of `trace` that its local root `root` ends; `events` (not counted as
    /// held any more) are the trace's held events, `error` whether one of them is an error,
    /// `after_drop` whether the trace was decided dropped before. Returns the events the decision
    /// does not take: on a drop, those not below `root`.
    fn decide_root(
        &mut self,
        trace: TraceId,
        mut events: Vec<Arc<Event>>,
        error: bool,
        after_drop: bool,
        root: Arc<Event>,
        kept: &mut Vec<Arc<Event>>,
    ) -> Vec<Arc<Event>> {
        match self.keep_cause(trace, error || is_error(&root), Some(&root)) {
            Some(cause) => {
                events.push(root);
                self.keep(trace, cause, events, true, kept);
                Vec::new()
            }
            None => {
                let root_id = root.id();
                let (below, rest) = split_below(events, root_id);
                self.count_drop(below.len() as u64 + 1, after_drop, true);
                self.remember(trace, Decision::Dropped(Some(root_id)));
                rest
            }
        }
    }

    /// Decides `held`, a trace (or a later part of one) whose root did not come (`max_wait`, or
    /// the sampler finishing).
    fn decide_rootless(&mut self, trace: TraceId, held: Held, kept: &mut Vec<Arc<Event>>) {
        self.stats.held -= held.events.len() as u64;
        match self.keep_cause(trace, held.error, None) {
            Some(cause) => self.keep(trace, cause, held.events, false, kept),
            None => {
                self.count_drop(held.events.len() as u64, held.after_drop, false);
                // A root dropped before still has its late children dropped at once.
                let root = match self.decided.get(&trace) {
                    Some(Decision::Dropped(root)) => *root,
                    _ => None,
                };
                self.remember(trace, Decision::Dropped(root));
            }
        }
    }

    /// Keeps `events` (not counted as held any more), the part of `trace` being decided, for
    /// `cause`; `rooted` when its local root is among them.
    fn keep(
        &mut self,
        trace: TraceId,
        cause: KeepCause,
        events: Vec<Arc<Event>>,
        rooted: bool,
        kept: &mut Vec<Arc<Event>>,
    ) {
        match cause {
            KeepCause::Error => self.stats.traces_kept_error += 1,
            KeepCause::Slow => self.stats.traces_kept_slow += 1,
            KeepCause::Ratio => self.stats.traces_kept_ratio += 1,
        }
        if !rooted {
            self.stats.traces_expired += 1;
        }
        self.stats.kept += events.len() as u64;
        kept.extend(events);
        self.remember(trace, Decision::Kept);
    }

    /// Counts `n` dropped events of a part of a trace: `after_drop` when the trace was decided
    /// dropped before, `rooted` when its local root decided.
    fn count_drop(&mut self, n: u64, after_drop: bool, rooted: bool) {
        if after_drop {
            self.stats.dropped_late += n;
        } else if rooted {
            self.stats.traces_dropped += 1;
            self.stats.dropped_not_sampled += n;
        } else {
            self.stats.traces_expired += 1;
            self.stats.dropped_expired += n;
        }
    }

    /// Keeps `error`, an error of a trace decided dropped or evicted that has no root left to wait
    /// for, with every event of its trace still held; the trace is kept from now on.
    fn keep_error_at_once(&mut self, trace: TraceId, error: Arc<Event>, kept: &mut Vec<Arc<Event>>) {
        let mut events = match self.held.remove(&trace) {
            Some(held) => {
                self.by_age.remove(&held.seq);
                self.stats.held -= held.events.len() as u64;
                held.events
            }
            None => Vec::new(),
        };
        events.push(error);
        self.keep(trace, KeepCause::Error, events, true, kept);
    }

    /// Evicts the trace held longest.
    fn evict_oldest(&mut self) {
        if let Some((_, trace)) = self.by_age.pop_first() {
            let held = self.held.remove(&trace).expect("indexed");
            let n = held.events.len() as u64;
            self.stats.held -= n;
            self.stats.dropped_evicted += n;
            self.stats.traces_evicted += 1;
            self.remember(trace, Decision::Evicted);
        }
    }

    fn remember(&mut self, trace: TraceId, decision: Decision) {
        if self.decided.insert(trace, decision).is_none() {
            self.decided_order.push_back(trace);
        }
        let cap = self.config.max_traces.saturating_mul(4);
        while self.decided_order.len() > cap {
            if let Some(old) = self.decided_order.pop_front() {
                self.decided.remove(&old);
            }
        }
    }
}

/// Splits `events` (held events of one trace, in arrival order) into those below the local root
/// `root` (its descendants, through parents among `events`) and the rest, each in arrival order.
/// Parent ids from another process may form a cycle; an event on one is not below `root`.
fn split_below(events: Vec<Arc<Event>>, root: EventId) -> (Vec<Arc<Event>>, Vec<Arc<Event>>) {
    let parent = |event: &Event| event.parent_id().filter(|_| !event.parent_is_remote());
    // Most traces: every held event is a child of the root.
    if events.iter().all(|event| parent(event) == Some(root)) {
        return (events, Vec::new());
    }
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mark {
        Unknown,
        Visiting,
        Below,
        Other,
    }
    let index: HashMap<EventId, usize> = events.iter().enumerate().map(|(i, e)| (e.id(), i)).collect();
    let mut marks = vec![Mark::Unknown; events.len()];
    let mut path = Vec::new();
    for start in 0..events.len() {
        let mut at = start;
        let verdict = loop {
            match marks[at] {
                Mark::Below => break Mark::Below,
                // Visiting: a cycle of parent ids on the path being walked.
                Mark::Other | Mark::Visiting => break Mark::Other,
                Mark::Unknown => {}
            }
            marks[at] = Mark::Visiting;
            path.push(at);
            match parent(&events[at]) {
                Some(p) if p == root => break Mark::Below,
                Some(p) => match index.get(&p) {
                    Some(&next) => at = next,
                    None => break Mark::Other,
                },
                None => break Mark::Other,
            }
        };
        for &i in &path {
            marks[i] = verdict;
        }
        path.clear();
    }
    let mut below = Vec::new();
    let mut rest = Vec::new();
    for (event, mark) in events.into_iter().zip(marks) {
        if mark == Mark::Below {
            below.push(event);
        } else {
            rest.push(event);
        }
    }
    (below, rest)
}
