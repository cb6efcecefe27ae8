//! Per-name statistics over a sliding window: one hdrhistogram per name and time slot, at most
//! [`WebOptions::names`](crate::WebOptions::names) names (the least recently seen evicted), a
//! name dropped once its last event left the window.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use notify_core::event::EventId;
use notify_core::TraceId;
use serde::{Serialize, Serializer};

use crate::record::Trace;

/// Significant digits of the latency histograms (1% resolution).
const SIGFIG: u8 = 2;

/// The upper bounds of the latency buckets of [`NameStats::buckets`], in nanoseconds: one microsecond to
/// 10 s, 1-2.5-5 apart (the last bucket, above 10 s, has no bound). The range of notify's events,
/// from an in-memory lookup to a slow request.
pub const LATENCY_BUCKETS_NS: &[u64] = &[
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Bytes counted per name beyond its entry, its text and its histograms: the `Arc` header of the
/// name (two counters), the key in the name map and in the recency map (an `Arc<str>` each, a
/// `u64`), and a hash map slot's control byte, rounded up.
const NAME_OVERHEAD: usize =
    2 * std::mem::size_of::<usize>() + 2 * std::mem::size_of::<Arc<str>>() + std::mem::size_of::<u64>() + 8;

/// Latency of one name over the window, and per slot for the chart. Durations in nanoseconds.
///
/// ```
/// use notify_web::{TraceRecorder, WebOptions};
/// let recorder = TraceRecorder::new(WebOptions::new());
/// assert!(recorder.stats().is_empty());
/// ```
#[derive(Clone, Debug, Serialize)]
pub struct NameStats {
    /// The event name.
    pub name: String,
    /// Events of this name since the statistics started keeping it (the recorder's start, or the
    /// first event after the name was evicted or left the window), not only in the window.
    pub count: u64,
    /// Events of this name that ended within the window.
    pub window_count: u64,
    /// Events per second over the window (or over the recorder's life while that is shorter).
    pub rate: f64,
    /// Median duration in the window, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest duration in the window, ns.
    pub max_ns: u64,
    /// One point per slot of the window that saw events of this name, oldest first.
    pub series: Vec<SlotPoint>,
    /// The latency buckets that hold events of the window ([`LATENCY_BUCKETS_NS`]; empty ones
    /// left out), shortest first, each with a recent trace in it when one is held.
    pub buckets: Vec<LatencyBucket>,
}

/// One latency bucket of a name: the events of the window that took more than the previous
/// bucket's bound and at most `le_ns` (Prometheus' `le`), and a recent trace with such an event.
///
/// The count comes from the name's histogram (1% resolution: an event within 1% of a bound may
/// be counted on either side); the trace is the newest one the recorder holds (finished, kept by
/// sampling) with an event of this name and a duration in the bucket, so it opens on the page.
/// [`TraceRecorder::stats`](crate::TraceRecorder::stats) leaves `trace_id` and `event_id` out
/// (`None`); the page and [`stats_json`](crate::stats_json) fill them from the traces held.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct LatencyBucket {
    /// The bucket's upper bound, ns (inclusive); `None` for the last bucket (above 10 s).
    pub le_ns: Option<u64>,
    /// Events of the window in the bucket.
    pub count: u64,
    /// A recent trace with an event in this bucket (32 hex digits in JSON).
    #[serde(serialize_with = "trace_text")]
    pub trace_id: Option<TraceId>,
    /// That event (16 hex digits in JSON, the W3C span-id form): `/trace/<trace_id>?open=<event_id>`.
    #[serde(serialize_with = "event_text")]
    pub event_id: Option<EventId>,
}

fn trace_text<S: Serializer>(id: &Option<TraceId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.collect_str(id),
        None => s.serialize_none(),
    }
}

fn event_text<S: Serializer>(id: &Option<EventId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.collect_str(id),
        None => s.serialize_none(),
    }
}

/// The upper bound of the bucket of a duration of `ns` (`None`: above the last bound).
fn bucket_of(ns: u64) -> Option<u64> {
    LATENCY_BUCKETS_NS
        .get(LATENCY_BUCKETS_NS.partition_point(|&le| le < ns))
        .copied()
}

impl LatencyBucket {
    /// `/trace/<trace id>?open=<event id>#event-<event id>`: the trace view with the event open
    /// and in view; `None` without a trace.
    pub fn href(&self) -> Option<String> {
        let (trace, event) = (self.trace_id?, self.event_id?);
        Some(format!("/trace/{trace}?open={event}#event-{event}"))
    }
}

/// The bucket counts of `histogram`: non-empty buckets only, shortest first.
fn buckets_of(histogram: &Histogram<u64>) -> Vec<LatencyBucket> {
    let mut counts = vec![0_u64; LATENCY_BUCKETS_NS.len() + 1];
    for value in histogram.iter_recorded() {
        // The highest value equivalent to the recorded one: within 1% of what was recorded.
        let ns = histogram.median_equivalent(value.value_iterated_to());
        counts[LATENCY_BUCKETS_NS.partition_point(|&le| le < ns)] += value.count_at_value();
    }
    counts
        .into_iter()
        .enumerate()
        .filter(|(_, count)| *count > 0)
        .map(|(index, count)| LatencyBucket {
            le_ns: LATENCY_BUCKETS_NS.get(index).copied(),
            count,
            trace_id: None,
            event_id: None,
        })
        .collect()
}

/// Fills each bucket's `trace_id` and `event_id` with the newest event of `traces` (newest trace
/// first, as [`TraceRecorder::traces`](crate::TraceRecorder::traces) gives them) of that name
/// and in that bucket. `stats` is sorted by name, as [`Stats::snapshot`] makes it. One pass over
/// the events held, a binary search per event.
pub(crate) fn link_recent_traces(stats: &mut [NameStats], traces: &[std::sync::Arc<Trace>]) {
    debug_assert!(stats.windows(2).all(|w| w[0].name < w[1].name), "sorted by name");
    let mut unlinked: usize = stats.iter().map(|s| s.buckets.len()).sum();
    for trace in traces {
        if unlinked == 0 {
            return;
        }
        // Newest event first within a trace too.
        for event in trace.events().iter().rev() {
            let Ok(index) = stats.binary_search_by(|s| s.name.as_str().cmp(event.name())) else {
                continue;
            };
            let name = &mut stats[index];
            let ns = u64::try_from(event.duration().as_nanos()).unwrap_or(u64::MAX).max(1);
            let le = bucket_of(ns);
            if let Some(bucket) = name.buckets.iter_mut().find(|b| b.le_ns == le && b.trace_id.is_none()) {
                bucket.trace_id = Some(trace.trace_id());
                bucket.event_id = Some(event.id());
                unlinked -= 1;
            }
        }
    }
}

/// One slot of a [`NameStats::series`].
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SlotPoint {
    /// Where the slot starts, in seconds before now (0 to the window length).
    pub seconds_ago: f64,
    /// Events in the slot.
    pub count: u64,
    /// Median duration in the slot, ns.
    pub p50_ns: u64,
    /// 99th percentile in the slot, ns.
    pub p99_ns: u64,
}

struct Slot {
    index: u64,
    histogram: Histogram<u64>,
}

impl Slot {
    /// Heap and inline bytes: the histogram's counts are exactly `distinct_values` long (see
    /// [`Stats::record`], which reallocates them to fit after a resize).
    fn bytes(&self) -> usize {
        std::mem::size_of::<Slot>() + self.histogram.distinct_values() * std::mem::size_of::<u64>()
    }
}

struct NameEntry {
    count: u64,
    /// The recency stamp: the key of this name in [`Stats::recency`].
    seen: u64,
    /// The newest slot index an event of this name ended in.
    newest_slot: u64,
    slots: Vec<Option<Slot>>,
    /// What this entry takes (see [`NameEntry::bytes`]), kept up to date.
    bytes: usize,
}

/// The statistics of the names seen recently: bounded in count, evicted least recently seen first.
pub(crate) struct Stats {
    epoch: Instant,
    slot_length: Duration,
    slots: usize,
    max_names: usize,
    names: HashMap<Arc<str>, NameEntry>,
    /// Names by the stamp of their last event, oldest first.
    recency: BTreeMap<u64, Arc<str>>,
    stamp: u64,
    /// Names evicted to stay within `max_names`.
    pub(crate) evicted_names: u64,
    /// Names dropped because their last event left the window.
    pub(crate) expired_names: u64,
    /// Bytes of every entry (see [`Stats::memory_bytes`]).
    memory: usize,
}

impl Stats {
    pub(crate) fn new(slot_length: Duration, slots: usize, max_names: usize) -> Stats {
        Stats {
            epoch: Instant::now(),
            slot_length: slot_length.max(Duration::from_micros(1)),
            slots,
            max_names: max_names.max(1),
            names: HashMap::new(),
            recency: BTreeMap::new(),
            stamp: 0,
            evicted_names: 0,
            expired_names: 0,
            memory: 0,
        }
    }

    fn slot_of(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.epoch).as_nanos() / self.slot_length.as_nanos()) as u64
    }

    /// The oldest slot index still in the window as of slot `current`.
    fn oldest_live(&self, current: u64) -> u64 {
        (current + 1).saturating_sub(self.slots as u64)
    }

    /// The shared name of an entry kept now, so stored events need not copy it.
    pub(crate) fn interned(&self, name: &str) -> Option<Arc<str>> {
        self.names.get_key_value(name).map(|(name, _)| name.clone())
    }

    /// Counts one event of `name` that ended at `end` and took `duration`. A name not kept yet
    /// evicts the least recently seen one when [`WebOptions::names`](crate::WebOptions::names)
    /// are kept already; names whose newest event left the window are dropped first.
    pub(crate) fn record(&mut self, name: &Arc<str>, end: Instant, duration: Duration, now: Instant) {
        self.expire(now);
        let index = self.slot_of(end);
        self.stamp += 1;
        let stamp = self.stamp;
        if let Some(entry) = self.names.get(name) {
            self.recency.remove(&entry.seen);
        } else {
            while self.names.len() >= self.max_names {
                let Some((_, oldest)) = self.recency.pop_first() else {
                    break;
                };
                if let Some(gone) = self.names.remove(&oldest) {
                    self.memory -= gone.bytes;
                    self.evicted_names += 1;
                }
            }
            let bytes = NAME_OVERHEAD
                + name.len()
                + std::mem::size_of::<NameEntry>()
                + self.slots * std::mem::size_of::<Option<Slot>>();
            self.memory += bytes;
            let entry = NameEntry {
                count: 0,
                seen: stamp,
                newest_slot: index,
                slots: (0..self.slots).map(|_| None).collect(),
                bytes,
            };
            self.names.insert(name.clone(), entry);
        }
        let entry = self.names.get_mut(name).expect("present or inserted above");
        entry.seen = stamp;
        entry.newest_slot = entry.newest_slot.max(index);
        self.recency.insert(stamp, name.clone());
        entry.count += 1;
        let cell = &mut entry.slots[(index % self.slots as u64) as usize];
        match cell {
            Some(slot) if slot.index == index => {}
            Some(slot) if slot.index > index => return, // older than the window
            _ => {
                let histogram = Histogram::new(SIGFIG).expect("2 significant digits are valid");
                let slot = Slot { index, histogram };
                let old = cell.replace(slot).map_or(0, |old| old.bytes());
                let new = cell.as_ref().map_or(0, Slot::bytes);
                entry.bytes = entry.bytes + new - old;
                self.memory = self.memory + new - old;
            }
        }
        let slot = cell.as_mut().expect("set above");
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX).max(1);
        let before = slot.bytes();
        let counts_before = slot.histogram.distinct_values();
        // An auto-resizing histogram takes any u64.
        let _ = slot.histogram.record(nanos);
        if slot.histogram.distinct_values() != counts_before {
            // A resize grows the counts' Vec amortised (up to twice what it needs); a clone
            // allocates exactly their length, so the bytes counted are the bytes held. Resizes
            // happen only when a slot's largest value grows past a power of two.
            slot.histogram = slot.histogram.clone();
        }
        let after = slot.bytes();
        entry.bytes = entry.bytes + after - before;
        self.memory = self.memory + after - before;
    }

    /// Drops the names whose newest event ended before the window as of `now`, counted in
    /// `expired_names`.
    pub(crate) fn expire(&mut self, now: Instant) {
        let oldest = self.oldest_live(self.slot_of(now));
        // Names are in the recency map in arrival order; events end roughly in that order, so
        // the expired ones are at its front. One that is not (an event that arrived late but
        // ended early) is dropped when it reaches the front, and hidden by `snapshot` until then.
        while let Some((_, name)) = self.recency.first_key_value() {
            let entry = self.names.get(name).expect("every recency key names an entry");
            if entry.newest_slot >= oldest {
                break;
            }
            let (_, name) = self.recency.pop_first().expect("not empty");
            let gone = self.names.remove(&name).expect("present");
            self.memory -= gone.bytes;
            self.expired_names += 1;
        }
    }

    /// The bytes the statistics take: per name its entry, its text, its map entries and the
    /// counts of its histograms (exactly as long as they are allocated).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.memory
    }

    /// The number of names kept now.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The statistics as of `now`, sorted by name; names without an event in the window are left
    /// out.
    pub(crate) fn snapshot(&self, now: Instant) -> Vec<NameStats> {
        let current = self.slot_of(now);
        let oldest = self.oldest_live(current);
        let covered = now
            .saturating_duration_since(self.epoch)
            .min(self.slot_length * self.slots as u32)
            .max(self.slot_length);
        let slot_secs = self.slot_length.as_secs_f64();
        let into_slot = now.saturating_duration_since(self.epoch).as_secs_f64() - current as f64 * slot_secs;
        let mut out: Vec<NameStats> = self
            .names
            .iter()
            .filter(|(_, entry)| entry.newest_slot >= oldest)
            .map(|(name, entry)| {
                let mut live: Vec<&Slot> = entry
                    .slots
                    .iter()
                    .flatten()
                    .filter(|s| s.index >= oldest && s.index <= current)
                    .collect();
                live.sort_by_key(|s| s.index);
                let mut merged = Histogram::<u64>::new(SIGFIG).expect("valid");
                for slot in &live {
                    merged.add(&slot.histogram).expect("auto-resizing histograms merge");
                }
                let q = |h: &Histogram<u64>, q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
                NameStats {
                    name: name.to_string(),
                    count: entry.count,
                    window_count: merged.len(),
                    rate: merged.len() as f64 / covered.as_secs_f64(),
                    p50_ns: q(&merged, 0.5),
                    p90_ns: q(&merged, 0.9),
                    p99_ns: q(&merged, 0.99),
                    max_ns: if merged.is_empty() { 0 } else { merged.max() },
                    buckets: buckets_of(&merged),
                    series: live
                        .iter()
                        .map(|s| SlotPoint {
                            seconds_ago: (current - s.index) as f64 * slot_secs + into_slot,
                            count: s.histogram.len(),
                            p50_ns: q(&s.histogram, 0.5),
                            p99_ns: q(&s.histogram, 0.99),
                        })
                        .collect(),
                }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The window length.
    pub(crate) fn window(&self) -> Duration {
        self.slot_length * self.slots as u32
    }
}
