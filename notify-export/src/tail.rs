//! Tail sampling in-process ([`TailSampler`]): hold each trace's events until its local root
//! ends, then keep the trace whole or drop it whole.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::event::Outcome;
use notify_core::payload::EXCEPTION_KEY;
use notify_core::{Event, TraceId};

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
    /// use notify_export::TailSampling;
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
}

/// Counters of a [`TailSampler`]: traces by decision, events by fate. Exact: every event offered
/// is kept (`kept`), held (`held`) or in exactly one `dropped_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TailStats {
    /// Traces kept because one of their events is an error.
    pub traces_kept_error: u64,
    /// Traces kept because their root was slow (and had no error).
    pub traces_kept_slow: u64,
    /// Traces kept by the ratio.
    pub traces_kept_ratio: u64,
    /// Traces dropped by the decision (their root arrived).
    pub traces_dropped: u64,
    /// Traces evicted because `max_traces` were held.
    pub traces_evicted: u64,
    /// Traces decided without their root after `max_wait` (kept or not).
    pub traces_expired: u64,
    /// Events handed on to the sink.
    pub kept: u64,
    /// Of `kept`, those that arrived after their trace was decided.
    pub kept_late: u64,
    /// Events of traces the decision dropped.
    pub dropped_not_sampled: u64,
    /// Events of evicted traces (held then, or arriving later).
    pub dropped_evicted: u64,
    /// Events beyond `max_events_per_trace`.
    pub dropped_over_limit: u64,
    /// Events of traces that expired without their root and were not kept.
    pub dropped_expired: u64,
    /// Events that arrived after their trace was decided dropped.
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
    Kept,
    Dropped,
    Evicted,
}

/// One trace being held.
struct Held {
    events: Vec<Arc<Event>>,
    /// Its key in `TailSampler::by_age`.
    seq: u64,
    first: Instant,
    error: bool,
}

/// The tail-sampling stage: holds each trace's events until its local root ends, then keeps the
/// trace whole or drops it whole.
///
/// A `TailSampler` is a plain data structure that an exporter's own thread feeds with finished
/// events ([`TailSampler::offer`]) and ticks ([`TailSampler::expire`], when
/// [`TailSampler::next_expiry`] is due); the events it keeps come out in the `kept` vector, ready
/// for the sink. It takes `Arc<Event>` (what an owned-event subscriber receives) and knows nothing
/// of any sink.
///
/// **The decision**, made once per trace when its *local root* (an event without a parent in this
/// process: no parent, or a remote one) arrives: keep the whole trace when any of its events is an
/// error ([`is_error`]: an [`EXCEPTION_KEY`] entry in the payload, or an outcome other than
/// `completed`), else when the root took at least [`TailSampling::slower_than`], else when the
/// trace id falls in [`TailSampling::ratio`] (OpenTelemetry's `TraceIdRatioBased` arithmetic on
/// the trace id's low 64 bits, so every process decides a trace alike); otherwise drop it whole.
///
/// **Bounds**, each drop counted by cause in [`TailStats`]:
/// * at most `max_traces` traces held: a new trace beyond that evicts the one held longest
///   (its events, and later ones of that trace, are `dropped_evicted`);
/// * at most `max_events_per_trace` events held per trace (the root always gets in to decide):
///   further ones are `dropped_over_limit`;
/// * a trace whose root has not arrived `max_wait` after its first event is decided without it
///   (kept on an error or by the ratio, else `dropped_expired`);
/// * decisions are remembered for the last `4 * max_traces` traces, so events that finish after
///   their root (a detached task) follow the decision: kept (`kept_late`) or `dropped_late`; an
///   event of a forgotten trace starts a new one.
///
/// Memory is bounded by `max_traces * (max_events_per_trace + 1)` shared events plus
/// `4 * max_traces` remembered decisions (24 bytes each).
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use notify_export::{TailSampler, TailSampling};
/// use notify_core::{Event, Payload};
///
/// let mut sampler = TailSampler::new(TailSampling::new().slower_than(Duration::from_millis(100)).ratio(0.0));
/// let now = Instant::now();
/// let mut kept = Vec::new();
/// // A fast root with no error: dropped whole.
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
    /// use notify_export::{TailSampler, TailSampling};
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
    /// (this event alone, or a whole trace when this is its root).
    pub fn offer(&mut self, event: Arc<Event>, now: Instant, kept: &mut Vec<Arc<Event>>) {
        let trace = event.trace_id();
        if let Some(decision) = self.decided.get(&trace) {
            match decision {
                Decision::Kept => {
                    self.stats.kept += 1;
                    self.stats.kept_late += 1;
                    kept.push(event);
                }
                Decision::Dropped => self.stats.dropped_late += 1,
                Decision::Evicted => self.stats.dropped_evicted += 1,
            }
            return;
        }
        let root = is_local_root(&event);
        // One lookup of the trace (the maps hash with SipHash: it is most of the cost).
        let held = match self.held.entry(trace) {
            Entry::Occupied(mut entry) => {
                let held = entry.get_mut();
                if !root && held.events.len() >= self.config.max_events_per_trace {
                    self.stats.dropped_over_limit += 1;
                    return;
                }
                held.error |= is_error(&event);
                held.events.push(event);
                if !root {
                    self.stats.held += 1;
                    return;
                }
                let held = entry.remove();
                self.by_age.remove(&held.seq);
                self.stats.held -= (held.events.len() - 1) as u64;
                self.decide(trace, held.events, held.error, true, kept);
                return;
            }
            Entry::Vacant(entry) => {
                if root {
                    // A trace of one event (or whose root came first): decide at once.
                    let error = is_error(&event);
                    self.decide(trace, vec![event], error, true, kept);
                    return;
                }
                let seq = self.next_seq;
                entry.insert(Held {
                    events: Vec::new(),
                    seq,
                    first: now,
                    error: false,
                })
            }
        };
        held.error |= is_error(&event);
        held.events.push(event);
        self.stats.held += 1;
        self.next_seq += 1;
        self.by_age.insert(self.next_seq - 1, trace);
        // Past `max_traces` the trace held longest goes (never this one: it is the newest).
        if self.held.len() > self.config.max_traces {
            self.evict_oldest();
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
            self.stats.held -= held.events.len() as u64;
            self.stats.traces_expired += 1;
            self.decide(trace, held.events, held.error, false, kept);
        }
    }

    /// Decides every held trace now, as [`expire`](Self::expire) would (at shutdown).
    pub fn finish(&mut self, kept: &mut Vec<Arc<Event>>) {
        while let Some((_, trace)) = self.by_age.pop_first() {
            let held = self.held.remove(&trace).expect("indexed");
            self.stats.held -= held.events.len() as u64;
            self.stats.traces_expired += 1;
            self.decide(trace, held.events, held.error, false, kept);
        }
    }

    /// Decides `trace`, whose events (not counted as held any more) are `events`; `rooted` when its
    /// local root is the last of `events`.
    fn decide(
        &mut self,
        trace: TraceId,
        events: Vec<Arc<Event>>,
        error: bool,
        rooted: bool,
        kept: &mut Vec<Arc<Event>>,
    ) {
        let slow = rooted
            && match (self.config.slower_than, events.last()) {
                (Some(threshold), Some(root)) => root.duration() >= threshold,
                _ => false,
            };
        let decision = if error {
            self.stats.traces_kept_error += 1;
            Decision::Kept
        } else if slow {
            self.stats.traces_kept_slow += 1;
            Decision::Kept
        } else if self.config.ratio_keeps(trace) {
            self.stats.traces_kept_ratio += 1;
            Decision::Kept
        } else {
            Decision::Dropped
        };
        let n = events.len() as u64;
        if decision == Decision::Kept {
            self.stats.kept += n;
            kept.extend(events);
        } else if rooted {
            self.stats.traces_dropped += 1;
            self.stats.dropped_not_sampled += n;
        } else {
            self.stats.dropped_expired += n;
        }
        self.remember(trace, decision);
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
