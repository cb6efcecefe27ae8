//! The collector's thread: drain the queues, tail-sample, batch, export on the runtime, count,
//! report, answer flushes and the shutdown.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::failure::ExportDrops;
use notify_core::Event;

use crate::runtime::Driver;
use crate::settle::Settle;
use crate::shared::{lock, DropHook, Shared};
use crate::sink::{Sink, SinkFuture};
use crate::stats::{DropReport, ExportStats};
use crate::tail::TailSampler;

/// At most this many events' room is reserved up front for a batch: the batch size bounds a
/// batch, and a batch only grows to what is queued.
const MAX_RESERVED: usize = 4_096;

/// The collector thread's state.
pub(crate) struct Worker<S> {
    shared: Arc<Shared>,
    sink: S,
    driver: Driver,
    tail: Option<TailSampler>,
    delay: Duration,
    on_drops: Option<DropHook>,
    report_interval: Duration,
    reported: ExportStats,
    last_report: Instant,
    /// The sink keeps batches in flight and settles them itself ([`Sink::pipeline`]).
    pipelined: bool,
    /// The sink's `flush` ran since its last batch, because the queues ran empty.
    idle_flushed: bool,
    /// With a runtime of the collector's own: what the hand-off's wakes notify (the thread then
    /// waits inside the runtime, [`Driver::idle`]).
    idle_wake: Option<Arc<tokio::sync::Notify>>,
}

impl<S: Sink> Worker<S> {
    pub(crate) fn new(
        shared: Arc<Shared>,
        sink: S,
        driver: Driver,
        tail: Option<TailSampler>,
        delay: Duration,
        on_drops: Option<DropHook>,
        report_interval: Duration,
    ) -> Worker<S> {
        let idle_wake = shared.idle_wake.clone();
        Worker {
            shared,
            sink,
            driver,
            tail,
            delay,
            on_drops,
            report_interval,
            reported: ExportStats::default(),
            last_report: Instant::now(),
            pipelined: false,
            idle_flushed: false,
            idle_wake,
        }
    }

    pub(crate) fn run(mut self) {
        // What the sink logs or traces (an OTLP client's own tracing output) must not come back
        // through notify's bridges as events to export, forever.
        notify_core::suppression::suppress_telemetry_on_this_thread();
        self.pipelined = {
            // In the runtime's context: the sink may spawn the tasks that await confirmations.
            let _context = self.driver.enter();
            self.sink.pipeline(Settle::new(self.shared.clone()))
        };
        let mut events = Vec::with_capacity(self.shared.batch.min(MAX_RESERVED));
        let mut last_export = Instant::now();
        loop {
            let (flush_to, shutdown) = {
                let control = lock(&self.shared.control);
                (
                    (control.flush_requested > control.flushed).then_some(control.flush_requested),
                    control.shutdown,
                )
            };
            if shutdown {
                self.close();
                return;
            }
            if let Some(ticket) = flush_to {
                // Everything queued before the requests were made is in the queues now.
                self.drain(&mut events);
                let flushed = call(&self.driver, "flush", || self.sink.flush());
                if let Outcome::Failed(error) = flushed {
                    *lock(&self.shared.last_error) = Some(error);
                }
                self.report_drops(true, false);
                lock(&self.shared.control).flushed = ticket;
                self.shared.changed.notify_all();
                last_export = Instant::now();
                continue;
            }
            // A batch, or as much as one thread's queue holds (a queue smaller than a batch).
            let full = self.shared.handoff.len() >= self.shared.batch.min(self.shared.handoff.per_thread());
            if full || last_export.elapsed() >= self.delay {
                self.take_batch(&mut events);
                self.process(&mut events);
                last_export = Instant::now();
                self.report_drops(self.shared.handoff.is_empty(), false);
                if full {
                    continue;
                }
            }
            if let Some(tail) = &mut self.tail {
                let mut kept = Vec::new();
                tail.expire(Instant::now(), &mut kept);
                if !kept.is_empty() {
                    self.export_kept(kept);
                }
            }
            if self.has_requests() {
                continue;
            }
            if self.pipelined
                && !self.idle_flushed
                && self.shared.counters.in_flight.load(Ordering::Acquire) > 0
                && self.shared.handoff.is_empty()
            {
                // Going idle with batches in flight: the sink settles them (its `flush`), so that
                // a quiet period leaves nothing unconfirmed; what queues meanwhile makes the next
                // batch. Once per idle period: a sink whose flush leaves some in flight is not
                // asked again until it was given another batch.
                self.idle_flushed = true;
                if let Outcome::Failed(error) = call(&self.driver, "flush", || self.sink.flush()) {
                    *lock(&self.shared.last_error) = Some(error);
                }
                self.report_drops(self.shared.handoff.is_empty(), false);
                continue;
            }
            // Woken by a producer whose queue holds a batch, by a request, or at the delay.
            let waited = last_export.elapsed();
            self.park(self.delay.saturating_sub(waited).max(Duration::from_millis(1)));
        }
    }

    /// Waits for work (see [`Handoff::park`](crate::Handoff::park)); on a runtime of the
    /// collector's own, inside it ([`Driver::idle`]).
    fn park(&mut self, timeout: Duration) {
        let handoff = &self.shared.handoff;
        if let Some(wake) = &self.idle_wake {
            if handoff.prepare_wait() && !self.driver.idle(wake, timeout) {
                self.idle_wake = None;
            }
            handoff.end_wait();
        } else {
            handoff.park(timeout);
        }
    }

    fn has_requests(&self) -> bool {
        let control = lock(&self.shared.control);
        control.shutdown || control.flush_requested > control.flushed
    }

    fn take_batch(&mut self, events: &mut Vec<Arc<Event>>) {
        // Under the lock a timed-out shutdown sets: once it gave up, the queues stay as counted.
        let given_up = lock(&self.shared.given_up);
        if *given_up {
            return;
        }
        let room = self.shared.batch.saturating_sub(events.len());
        self.shared.handoff.drain(events, room);
    }

    /// Exports batches until the queues are empty.
    fn drain(&mut self, events: &mut Vec<Arc<Event>>) {
        loop {
            self.take_batch(events);
            if events.is_empty() {
                return;
            }
            self.process(events);
        }
    }

    /// Tail-samples and exports `events` (emptied).
    fn process(&mut self, events: &mut Vec<Arc<Event>>) {
        if events.is_empty() {
            return;
        }
        let kept = match &mut self.tail {
            Some(tail) => {
                let now = Instant::now();
                let mut kept = Vec::with_capacity(events.len());
                for event in events.drain(..) {
                    tail.offer(event, now, &mut kept);
                }
                tail.expire(now, &mut kept);
                kept
            }
            None => std::mem::take(events),
        };
        self.export_kept(kept);
        events.reserve(self.shared.batch.min(MAX_RESERVED));
    }

    /// Exports `kept` in batches, then publishes the tail sampler's counters.
    fn export_kept(&mut self, mut kept: Vec<Arc<Event>>) {
        let batch = self.shared.batch;
        let mut start = 0;
        while start < kept.len() {
            let end = (start + batch).min(kept.len());
            let n = (end - start) as u64;
            if self.shared.gave_up() {
                // A timed-out shutdown: stop after the current export (tail sampling can release
                // more than one batch at once).
                self.shared.counters.shutdown.fetch_add(n, Ordering::AcqRel);
            } else {
                let chunk = &kept[start..end];
                let counters = &self.shared.counters;
                self.idle_flushed = false;
                if self.pipelined {
                    // In flight from the call on: the sink may settle part of it at once.
                    counters.in_flight.fetch_add(n, Ordering::AcqRel);
                }
                let result = call(&self.driver, "export", || self.sink.export(chunk));
                match (result, self.pipelined) {
                    // Settled by the sink, now or later.
                    (Outcome::Done, true) => {}
                    (Outcome::Done, false) => {
                        counters.exported.fetch_add(n, Ordering::AcqRel);
                    }
                    (Outcome::Failed(error), pipelined) => {
                        let refused = if pipelined { self.shared.take_in_flight(n) } else { n };
                        counters.exporter_error.fetch_add(refused, Ordering::AcqRel);
                        *lock(&self.shared.last_error) = Some(error);
                    }
                }
            }
            start = end;
        }
        // Exported: their allocations go back for the next events (emptied here, on this
        // thread: the instrumenting threads neither allocate nor free an owned event).
        notify_core::export::recycle_all(&mut kept);
        if let Some(tail) = &self.tail {
            let stats = tail.stats();
            self.shared.counters.tail.store(stats.dropped(), Ordering::Release);
            self.shared.counters.held.store(stats.held, Ordering::Release);
            *lock(&self.shared.tail_stats) = Some(stats);
        }
    }

    /// Reports the drops since the last report, once the burst is over (`quiet`) or the report
    /// interval passed. Once a shutdown began, only its `last` report (one for the end of the
    /// burst the shutdown is part of).
    fn report_drops(&mut self, quiet: bool, last: bool) {
        if !last && self.shared.closed.load(Ordering::Acquire) {
            return;
        }
        let now = self.shared.stats();
        if now.dropped() == self.reported.dropped() {
            return;
        }
        if !quiet && self.last_report.elapsed() < self.report_interval {
            return;
        }
        let burst = now.since(&self.reported);
        let report = DropReport {
            exporter: self.shared.name.to_string(),
            burst,
            total: now,
            last_error: if burst.dropped_exporter_error > 0 {
                lock(&self.shared.last_error).clone()
            } else {
                None
            },
        };
        match self.on_drops.clone() {
            Some(hook) => {
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| hook(&report))) {
                    notify_core::failure::drop_panic_payload(panic);
                }
            }
            None => self.report_to_notifier(&report),
        }
        self.reported = now;
        self.last_report = Instant::now();
    }

    /// The default drop report: the burst's failures (not tail sampling's choices) through the
    /// failure hook of the first kept notifier still alive, else a warning.
    fn report_to_notifier(&self, report: &DropReport) {
        let burst = &report.burst;
        let mut drops = ExportDrops::new(self.shared.name.clone())
            .with("queue full", burst.dropped_queue_full)
            .with("exporter error", burst.dropped_exporter_error)
            .with("shutdown", burst.dropped_shutdown);
        if drops.dropped() == 0 {
            return;
        }
        if let Some(error) = &report.last_error {
            drops = drops.detail(error.clone());
        }
        if !self.shared.drop_reporter.report(drops) {
            log::warn!(target: "notify::export", "{report}");
        }
    }

    /// The end: drain, decide held traces, shut the sink down, count what is left, answer.
    fn close(&mut self) {
        let mut events = Vec::new();
        self.drain(&mut events);
        if let Some(tail) = &mut self.tail {
            let mut kept = Vec::new();
            tail.finish(&mut kept);
            self.export_kept(kept);
        }
        if let Outcome::Failed(error) = call(&self.driver, "shutdown", || self.sink.shutdown()) {
            log::warn!(target: "notify::export", "exporter `{}`: shutdown: {}", self.shared.name, crate::escape(&error));
        }
        // What a pipelining sink did not settle is lost with the thread; a later settle finds
        // nothing to take.
        let left = self.shared.take_in_flight(u64::MAX);
        self.shared.counters.shutdown.fetch_add(left, Ordering::AcqRel);
        // Later events are counted by the producers (closed) or by `stats` (left in the queues).
        self.shared.finished.store(true, Ordering::SeqCst);
        self.report_drops(true, true);
        {
            let mut control = lock(&self.shared.control);
            // Flushes that raced the shutdown: everything queued before them was exported above
            // (unless the shutdown gave up: then they end as `ShutDown`).
            if !self.shared.gave_up() {
                control.flushed = control.flush_requested;
            }
            control.finished = true;
        }
        self.shared.changed.notify_all();
    }
}

/// How one of the sink's futures ended.
enum Outcome {
    Done,
    /// `Err` or a panic: the text.
    Failed(String),
}

/// Makes one of the sink's futures and runs it on the runtime, a panic caught.
fn call<'a>(driver: &Driver, what: &str, make: impl FnOnce() -> SinkFuture<'a>) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| {
        let future = {
            let _context = driver.enter();
            make()
        };
        driver.block_on(future)
    })) {
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(error)) => Outcome::Failed(error.to_string()),
        Err(panic) => {
            let message = match what {
                "export" => format!("panicked: {}", notify_core::failure::panic_message(&*panic)),
                _ => format!("{what} panicked: {}", notify_core::failure::panic_message(&*panic)),
            };
            notify_core::failure::drop_panic_payload(panic);
            Outcome::Failed(message)
        }
    }
}
