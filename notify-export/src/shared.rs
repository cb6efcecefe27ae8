//! [`Shared`]: the state the instrumenting threads, the application and the collector's thread
//! share, and the counters behind [`ExportStats`].

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use notify_core::export::Overflow;

use crate::drop_report::DropReporter;
use crate::handoff::Handoff;
use crate::stats::{DropReport, ExportStats};
use crate::tail::TailStats;

/// The drop hook: called on the collector's thread, once per burst of drops.
pub(crate) type DropHook = Arc<dyn Fn(&DropReport) + Send + Sync>;

/// What the application asked the collector's thread for.
#[derive(Default)]
pub(crate) struct Control {
    /// Flush requests made so far (a ticket each).
    pub(crate) flush_requested: u64,
    /// The highest ticket whose flush is done.
    pub(crate) flushed: u64,
    /// A shutdown was asked for (or the last handle dropped).
    pub(crate) shutdown: bool,
    /// The collector's thread ended.
    pub(crate) finished: bool,
}

/// The state shared by the instrumenting threads, the application and the collector's thread.
pub(crate) struct Shared {
    pub(crate) name: Cow<'static, str>,
    pub(crate) runtime: &'static str,
    /// The instrumenting threads' queues (one per thread), drained by the collector's thread.
    pub(crate) handoff: Handoff,
    pub(crate) overflow: Overflow,
    pub(crate) block_limit: Option<Duration>,
    pub(crate) batch: usize,
    /// Flush tickets and the shutdown request: counters, never a queue, so a flush that timed out
    /// leaves nothing behind (its ticket is served by the next flush the thread does).
    pub(crate) control: Mutex<Control>,
    /// Signalled when `control.flushed` or `control.finished` changes.
    pub(crate) changed: Condvar,
    /// Shutdown began: new events are dropped (counted `dropped_shutdown`).
    pub(crate) closed: AtomicBool,
    /// The collector's thread ended: what is still queued was dropped at shutdown.
    pub(crate) finished: AtomicBool,
    /// A shutdown's timeout ran out: the thread takes nothing more from the queues (it checks
    /// under this lock before each batch), so what is queued is dropped at shutdown, and what it
    /// took but has not exported yet, after its current export, too.
    pub(crate) given_up: Mutex<bool>,
    pub(crate) counters: Counters,
    pub(crate) tail_stats: Mutex<Option<TailStats>>,
    /// Where the default drop report goes ([`Collector::report_through`](crate::Collector::report_through)).
    pub(crate) drop_reporter: DropReporter,
    /// The sink's last error message (an export's, a flush's, or one a pipelining sink settled
    /// with): the drop report shows it.
    pub(crate) last_error: Mutex<Option<String>>,
    /// Signalled (after `given_up` is set) when a shutdown's timeout ran out
    /// ([`Settle::given_up`](crate::Settle::given_up)).
    pub(crate) gave_up_signal: tokio::sync::Notify,
    /// With a runtime of the collector's own: what the hand-off's wakes notify (its thread
    /// waits inside the runtime).
    pub(crate) idle_wake: Option<Arc<tokio::sync::Notify>>,
}

/// The collector thread's counters (the hand-off counts what the producers dropped).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) exported: AtomicU64,
    pub(crate) exporter_error: AtomicU64,
    pub(crate) tail: AtomicU64,
    pub(crate) held: AtomicU64,
    /// Events the thread had taken from the queues and did not export because a shutdown gave up
    /// (or that a pipelining sink still had in flight when the thread ended).
    pub(crate) shutdown: AtomicU64,
    /// Events of batches a pipelining sink accepted and has not settled yet, plus the batch being
    /// exported to it ([`Sink::pipeline`](crate::Sink::pipeline)).
    pub(crate) in_flight: AtomicU64,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn stats(&self) -> ExportStats {
        let c = &self.counters;
        // Whether anything still leaves the queues, before the queues' snapshot: read after it, a
        // shutdown that ended (or gave up) in between would count as dropped events the thread
        // drained after the snapshot (and exports or counts again).
        let stopped = self.finished.load(Ordering::Acquire) || self.gave_up();
        // The thread's counters first: an event it counts was drained before.
        let exported = c.exported.load(Ordering::Acquire);
        let dropped_exporter_error = c.exporter_error.load(Ordering::Acquire);
        let dropped_tail_sampling = c.tail.load(Ordering::Acquire);
        let held = c.held.load(Ordering::Acquire);
        // Before the counters it moves into (read above): an event settled in between is then
        // seen in neither, never in both.
        let in_flight = c.in_flight.load(Ordering::Acquire);
        let given_up = c.shutdown.load(Ordering::Acquire);
        let handed = self.handoff.stats();
        let mut stats = ExportStats {
            exported,
            dropped_queue_full: handed.dropped_full,
            dropped_exporter_error,
            dropped_shutdown: handed.dropped_closed + given_up,
            dropped_tail_sampling,
            held,
            dequeued: handed.drained,
            in_flight,
            queued: handed.queued,
            taken_at_shutdown: given_up,
        };
        if stopped {
            // Nothing leaves the queues any more: events that raced past the `closed` check after
            // the thread's last look, or that a timed-out shutdown left there.
            stats.dropped_shutdown += handed.queued;
            stats.queued = 0;
        }
        stats
    }

    /// Takes up to `events` out of `in_flight` (what a pipelining sink settles): how many were
    /// there to take. Each event leaves `in_flight` once, whoever takes it.
    pub(crate) fn take_in_flight(&self, events: u64) -> u64 {
        let mut taken = 0;
        let _ = self
            .counters
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                taken = events.min(now);
                Some(now - taken)
            });
        taken
    }

    /// True once a shutdown's timeout ran out.
    pub(crate) fn gave_up(&self) -> bool {
        *lock(&self.given_up)
    }

    /// Stops taking events and asks the thread to end (once).
    pub(crate) fn begin_shutdown(&self) -> bool {
        if self.closed.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.handoff.close();
        lock(&self.control).shutdown = true;
        self.handoff.wake();
        true
    }

    /// Waits until `done` holds of the control state, at most `timeout`; returns whether it held.
    pub(crate) fn wait(&self, timeout: Duration, mut done: impl FnMut(&Control) -> bool) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut control = lock(&self.control);
        loop {
            if done(&control) {
                return true;
            }
            let wait = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    left
                }
                // No deadline this side of the clock's end: wait in long slices.
                None => Duration::from_secs(3600),
            };
            control = self
                .changed
                .wait_timeout(control, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
