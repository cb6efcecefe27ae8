//! Per-name statistics over a sliding window: one hdrhistogram per name and time slot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant digits of the latency histograms (1% resolution).
const SIGFIG: u8 = 2;

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
    /// Events of this name since the recorder started (not only in the window).
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

struct NameEntry {
    count: u64,
    slots: Vec<Option<Slot>>,
}

/// The statistics of every name seen.
pub(crate) struct Stats {
    epoch: Instant,
    slot_length: Duration,
    slots: usize,
    names: BTreeMap<Arc<str>, NameEntry>,
}

impl Stats {
    pub(crate) fn new(slot_length: Duration, slots: usize) -> Stats {
        Stats {
            epoch: Instant::now(),
            slot_length: slot_length.max(Duration::from_micros(1)),
            slots,
            names: BTreeMap::new(),
        }
    }

    fn slot_of(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.epoch).as_nanos() / self.slot_length.as_nanos()) as u64
    }

    /// Counts one event of `name` that ended at `end` and took `duration`.
    pub(crate) fn record(&mut self, name: &Arc<str>, end: Instant, duration: Duration) {
        let index = self.slot_of(end);
        let slots = self.slots;
        let entry = match self.names.get_mut(name) {
            Some(entry) => entry,
            None => self.names.entry(name.clone()).or_insert_with(|| NameEntry {
                count: 0,
                slots: (0..slots).map(|_| None).collect(),
            }),
        };
        entry.count += 1;
        let cell = &mut entry.slots[(index % slots as u64) as usize];
        match cell {
            Some(slot) if slot.index == index => {}
            Some(slot) if slot.index > index => return, // older than the window
            _ => {
                let histogram = Histogram::new(SIGFIG).expect("2 significant digits are valid");
                *cell = Some(Slot { index, histogram });
            }
        }
        let slot = cell.as_mut().expect("set above");
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX).max(1);
        // An auto-resizing histogram takes any u64.
        let _ = slot.histogram.record(nanos);
    }

    /// The statistics as of `now`, by name.
    pub(crate) fn snapshot(&self, now: Instant) -> Vec<NameStats> {
        let current = self.slot_of(now);
        let oldest = (current + 1).saturating_sub(self.slots as u64);
        let covered = now
            .saturating_duration_since(self.epoch)
            .min(self.slot_length * self.slots as u32)
            .max(self.slot_length);
        let slot_secs = self.slot_length.as_secs_f64();
        let into_slot = now.saturating_duration_since(self.epoch).as_secs_f64() - current as f64 * slot_secs;
        self.names
            .iter()
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
            .collect()
    }

    /// The window length.
    pub(crate) fn window(&self) -> Duration {
        self.slot_length * self.slots as u32
    }
}
