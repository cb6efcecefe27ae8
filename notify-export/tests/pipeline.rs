//! Pipelining sinks (`Sink::pipeline`, `Settle`): several batches in flight at once, each event
//! settled exactly once by the sink, what is left in flight at the end counted, a timed-out
//! shutdown that stops a retrying sink; and a runtime of the collector's own driven while the
//! collector waits for work (a client's connection task keeps running).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Payload};
use notify_export::{ready, Collector, DropReport, ExportError, Settle, Sink, SinkError, SinkFuture};

fn event(name: &'static str) -> Arc<Event> {
    let now = Instant::now();
    Arc::new(Event::new(name, now, now, Payload::new()))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What the test and its pipelining sink share.
#[derive(Default)]
struct Wire {
    /// The sizes of the batches taken and not settled yet, oldest first.
    unsettled: Mutex<VecDeque<u64>>,
    settle: Mutex<Option<Settle>>,
    /// `flush` settles only once this is open (before, it returns at once, settling nothing).
    released: AtomicBool,
    /// `flush` settles everything (else it returns at once, settling nothing).
    flush_settles: bool,
    /// `flush` calls.
    flushes: std::sync::atomic::AtomicUsize,
}

/// A sink whose export returns as soon as it took the batch ("on the wire"); `flush` settles
/// every batch once the test released it.
struct Pipelined(Arc<Wire>);

impl Sink for Pipelined {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.0.unsettled.lock().unwrap().push_back(batch.len() as u64);
        ready(Ok(()))
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        self.0.flushes.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if !self.0.flush_settles || !self.0.released.load(Ordering::SeqCst) {
                return Ok(());
            }
            let settle = self.0.settle.lock().unwrap().clone().expect("pipeline was called");
            let mut unsettled = self.0.unsettled.lock().unwrap();
            while let Some(n) = unsettled.pop_front() {
                settle.exported(n);
            }
            Ok(())
        })
    }

    fn pipeline(&mut self, settle: Settle) -> bool {
        *self.0.settle.lock().unwrap() = Some(settle);
        true
    }
}

#[test]
fn i46_pipelined_batches_stay_in_flight_until_settled_and_each_event_counts_once() {
    let wire = Arc::new(Wire {
        flush_settles: true,
        ..Wire::default()
    });
    let reports = Arc::new(Mutex::new(Vec::<DropReport>::new()));
    let collector = Collector::builder("pipelined", Pipelined(wire.clone()))
        .max_batch_size(4)
        .scheduled_delay(Duration::from_millis(1))
        .on_drops({
            let reports = reports.clone();
            move |report| reports.lock().unwrap().push(report.clone())
        })
        .build();
    for _ in 0..20 {
        collector.push(&event("piped.event"));
    }
    // Every batch taken, none confirmed: all in flight at once (the idle-time flush settles
    // nothing before the release).
    wait_until("every batch in flight", || collector.stats().in_flight == 20);
    let stats = collector.stats();
    assert_eq!(
        (stats.in_flight, stats.exported, stats.dropped()),
        (20, 0, 0),
        "{stats:?}"
    );
    assert_eq!(stats.received(), 20);
    let batches = wire.unsettled.lock().unwrap().len();
    assert!(
        batches >= 5,
        "at least 5 batches of at most 4 on the wire at once: {batches}"
    );

    // The far end refuses the first batch: the sink settles it failed, from this thread.
    let settle = wire.settle.lock().unwrap().clone().unwrap();
    let first = wire.unsettled.lock().unwrap().pop_front().unwrap();
    assert_eq!(settle.failed(first, &SinkError::new("refused by the far end")), first);
    assert_eq!(settle.in_flight(), 20 - first);
    wire.released.store(true, Ordering::SeqCst);
    let stats = collector.force_flush(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (
            stats.exported,
            stats.dropped_exporter_error,
            stats.in_flight,
            stats.received()
        ),
        (20 - first, first, 0, 20),
        "{stats:?}"
    );
    // Settling more than is in flight counts nothing.
    assert_eq!(settle.exported(100), 0);
    assert_eq!(collector.stats().exported, 20 - first);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].burst.dropped_exporter_error, first);
    assert_eq!(reports[0].last_error.as_deref(), Some("refused by the far end"));
}

#[test]
fn what_a_pipelining_sink_has_not_settled_when_it_shuts_down_is_dropped_at_shutdown() {
    let wire = Arc::new(Wire::default());
    let collector = Collector::builder("never-settles", Pipelined(wire.clone()))
        .max_batch_size(2)
        .scheduled_delay(Duration::from_millis(1))
        .build();
    for _ in 0..5 {
        collector.push(&event("unsettled.event"));
    }
    // Idle with 5 in flight: one flush per idle period, not one per turn of the collector's loop
    // (its flush leaves them in flight).
    wait_until("all in flight, flushed", || {
        collector.stats().in_flight == 5 && wire.flushes.load(Ordering::SeqCst) >= 1
    });
    std::thread::sleep(Duration::from_millis(50));
    let flushes = wire.flushes.load(Ordering::SeqCst);
    assert!(flushes <= 3, "at most one per batch taken: {flushes}");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        wire.flushes.load(Ordering::SeqCst),
        flushes,
        "no flush while nothing changes"
    );
    let stats = collector.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (
            stats.exported,
            stats.dropped_shutdown,
            stats.in_flight,
            stats.received()
        ),
        (0, 5, 0, 5),
        "{stats:?}"
    );
    // A confirmation after the end finds nothing in flight.
    let settle = wire.settle.lock().unwrap().clone().unwrap();
    assert_eq!(settle.exported(5), 0);
    assert_eq!(collector.stats().exported, 0);
}

/// A pipelining sink whose far end never confirms: its flush "re-sends" until the collector's
/// shutdown gives up.
struct Retrying {
    settle: Option<Settle>,
    flushing: Arc<AtomicBool>,
}

impl Sink for Retrying {
    fn export<'a>(&'a mut self, _batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        ready(Ok(()))
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        self.flushing.store(true, Ordering::SeqCst);
        let settle = self.settle.clone().expect("pipeline was called");
        Box::pin(async move {
            // Retries for ever; only the collector's give-up ends it.
            settle.given_up().await;
            Ok(())
        })
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        self.flush()
    }

    fn pipeline(&mut self, settle: Settle) -> bool {
        self.settle = Some(settle);
        true
    }
}

#[test]
fn i46_a_timed_out_shutdown_stops_a_retrying_sink_and_counts_its_flight_at_shutdown() {
    let flushing = Arc::new(AtomicBool::new(false));
    let collector = Collector::builder(
        "retrying",
        Retrying {
            settle: None,
            flushing: flushing.clone(),
        },
    )
    .max_batch_size(3)
    .scheduled_delay(Duration::from_millis(1))
    .build();
    for _ in 0..3 {
        collector.push(&event("unconfirmed.event"));
    }
    // Idle with 3 in flight: the thread is in the sink's flush, retrying.
    wait_until("the idle-time flush", || flushing.load(Ordering::SeqCst));
    collector.push(&event("queued.event"));
    match collector.shutdown(Duration::from_millis(50)) {
        Err(ExportError::TimedOut(stats)) => assert_eq!(stats.exported, 0),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // The retries stop, the thread ends: the batch in flight and the event still queued are
    // both counted.
    wait_until(
        "the thread's end",
        || matches!(collector.force_flush(Duration::ZERO), Err(ExportError::ShutDown(s)) if s.dropped_shutdown == 4 && s.in_flight == 0),
    );
    let stats = collector.stats();
    assert_eq!(
        (
            stats.exported,
            stats.dropped_shutdown,
            stats.received(),
            stats.in_flight
        ),
        (0, 4, 4, 0),
        "{stats:?}"
    );
}

/// A sink that starts a task of its own on its runtime (as a client's connection task), which
/// ticks while nothing is exported.
struct Ticking(Arc<std::sync::atomic::AtomicUsize>);

impl Sink for Ticking {
    fn export<'a>(&'a mut self, _batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        let ticks = self.0.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks.fetch_add(1, Ordering::SeqCst);
            }
        });
        ready(Ok(()))
    }
}

#[test]
fn i46_2_a_runtime_of_the_collectors_own_runs_its_tasks_while_the_collector_waits_for_work() {
    let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Built on a plain thread: the collector's own current-thread runtime.
    let collector = Collector::builder("ticking", Ticking(ticks.clone()))
        .scheduled_delay(Duration::from_secs(3600))
        .build();
    collector.push(&event("start.ticking"));
    collector.force_flush(Duration::from_secs(10)).unwrap();
    // Nothing more to export: the collector waits, its runtime keeps running the task.
    let before = ticks.load(Ordering::SeqCst);
    wait_until("the task ticking while the collector is idle", || {
        ticks.load(Ordering::SeqCst) >= before + 5
    });
    // And a push still wakes the collector at once (a batch of 1: the queue's wake).
    let collector = Collector::builder("waking", Ticking(Arc::default()))
        .max_batch_size(1)
        .scheduled_delay(Duration::from_secs(3600))
        .build();
    collector.push(&event("wakes.collector"));
    wait_until("the event exported without a flush", || collector.stats().exported == 1);
}
