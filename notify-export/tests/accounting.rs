//! Exact accounting, once, on the collector: every event handed to it is exported (accepted by
//! the sink) or dropped with a cause, under each overflow policy, with failing and panicking
//! sinks, and at shutdown; drops are reported once per burst. (These tests ran against
//! notify-opentelemetry's exporter before it sat on the collector.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use notify_core::export::Overflow;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber, Subscription, Value};
use notify_export::{ready, Collector, CollectorBuilder, DropReport, ExportError, Sink, SinkError, SinkFuture};

/// The subscription of an exporter on the collector: every event to `push`.
struct Push(Collector);

impl OwnedEventSubscriber for Push {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.push(event);
    }
}

/// Subscribes `collector` to every event of `notifier`, reporting drops through it.
fn subscribe(collector: &Collector, notifier: &Notifier) -> Subscription {
    let subscription = notifier.subscribe(Pattern::all(), Subscriber::owned(Push(collector.clone())));
    collector.report_through(&subscription);
    subscription
}

const FLUSH: Duration = Duration::from_secs(30);

/// A sink keeping every event it accepted (the in-memory exporter of these tests).
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<Arc<Event>>>>);

impl Memory {
    fn events(&self) -> Vec<Arc<Event>> {
        self.0.lock().unwrap().clone()
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

impl Sink for Memory {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.0.lock().unwrap().extend(batch.iter().cloned());
        ready(Ok(()))
    }
}

/// A sink whose export never completes (a far end that accepts the connection and never answers).
struct Hung;

impl Sink for Hung {
    fn export<'a>(&'a mut self, _batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        Box::pin(std::future::pending())
    }
}

const BURST: u64 = 100_000;

/// Publishes `n` events `burst.accounting` (payload `i`) on `notifier`.
fn burst(notifier: &Notifier, n: u64) {
    for i in 0..n {
        notifier.instrument("burst.accounting", || Payload::new().with("i", i), |_| ());
    }
}

/// The drop reports a hook received.
fn report_sink() -> (
    Arc<Mutex<Vec<DropReport>>>,
    impl Fn(&DropReport) + Send + Sync + 'static,
) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    (reports, move |r: &DropReport| sink.lock().unwrap().push(r.clone()))
}

fn i_of(event: &Arc<Event>) -> i64 {
    match event.payload().get("i") {
        Some(Value::U64(i)) => *i as i64,
        other => panic!("no i: {other:?}"),
    }
}

#[test]
fn a_100000_event_burst_dropping_newest_is_counted_exactly() {
    let memory = Memory::default();
    let (reports, hook) = report_sink();
    let exporter = Collector::builder("accounting", memory.clone())
        .queue_capacity(1_024)
        .on_drops(hook)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, BURST);
    let stats = exporter.force_flush(FLUSH).unwrap();
    let held = memory.len() as u64;
    assert_eq!(stats.exported, held, "exported is what the sink holds");
    assert_eq!(stats.exported + stats.dropped(), BURST, "{stats:?}");
    assert_eq!(stats.dropped(), stats.dropped_queue_full, "{stats:?}");
    assert_eq!(stats.received(), BURST);
    assert_eq!(exporter.stats().exported, held);
    // Each report carries a burst's growth; together they account for every drop.
    let reports = reports.lock().unwrap();
    let reported: u64 = reports.iter().map(|r| r.burst.dropped_queue_full).sum();
    assert_eq!(reported, stats.dropped_queue_full);
    assert!(reports.len() as u64 <= stats.dropped_queue_full.max(1));
}

#[test]
fn a_100000_event_burst_with_the_wait_policy_drops_nothing() {
    let memory = Memory::default();
    let exporter = Collector::builder("accounting", memory.clone())
        .queue_capacity(256)
        .max_batch_size(64)
        .overflow(Overflow::Block)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, BURST);
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!(stats.exported, BURST, "{stats:?}");
    assert_eq!(stats.dropped(), 0, "{stats:?}");
    let spans = memory.events();
    assert_eq!(spans.len() as u64, BURST);
    // One producer: the queue keeps publish order.
    assert!(spans.iter().map(i_of).eq(0..BURST as i64));
}

/// A sink that blocks while its gate is closed (so a test can fill the queue behind it),
/// then keeps what it gets.
#[derive(Debug, Default)]
struct Gated {
    closed: Mutex<bool>,
    opened: Condvar,
    spans: Mutex<Vec<Arc<Event>>>,
    entered: AtomicBool,
}

impl Gated {
    fn new() -> Arc<Gated> {
        Arc::new(Gated {
            closed: Mutex::new(true),
            ..Gated::default()
        })
    }
    fn open(&self) {
        *self.closed.lock().unwrap() = false;
        self.opened.notify_all();
    }
}

#[derive(Debug)]
struct GatedExporter(Arc<Gated>);

impl Sink for GatedExporter {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.0.entered.store(true, Ordering::SeqCst);
        let mut closed = self.0.closed.lock().unwrap();
        while *closed {
            closed = self.0.opened.wait(closed).unwrap();
        }
        drop(closed);
        self.0.spans.lock().unwrap().extend(batch.iter().cloned());
        ready(Ok(()))
    }
}

#[test]
fn dropping_oldest_keeps_the_newest_and_reports_the_burst_once() {
    let gate = Gated::new();
    let (reports, hook) = report_sink();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone()))
        .queue_capacity(100)
        .max_batch_size(100)
        .scheduled_delay(Duration::from_secs(3600))
        .report_interval(Duration::from_secs(3600))
        .overflow(Overflow::DropOldest)
        .on_drops(hook)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, 10_000);
    gate.open();
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!(stats.exported + stats.dropped_queue_full, 10_000, "{stats:?}");
    assert_eq!(stats.dropped(), stats.dropped_queue_full);
    let spans = gate.spans.lock().unwrap();
    assert_eq!(spans.len() as u64, stats.exported);
    // The newest 100 survive the burst (what the thread took before, if anything, is older).
    let tail: Vec<i64> = spans[spans.len() - 100..].iter().map(i_of).collect();
    assert_eq!(tail, (9_900..10_000).collect::<Vec<_>>());
    // One burst, one report, with exactly its drops.
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].burst.dropped_queue_full, stats.dropped_queue_full);
    assert_eq!(reports[0].total, stats);
    assert_eq!(reports[0].last_error, None);
}

#[test]
fn dropping_newest_behind_a_stuck_exporter_drops_exactly_the_overflow() {
    let gate = Gated::new();
    let (reports, hook) = report_sink();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone()))
        .queue_capacity(50)
        .max_batch_size(50)
        .scheduled_delay(Duration::from_secs(3600))
        .report_interval(Duration::from_secs(3600))
        .on_drops(hook)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    // Fill the queue and let the thread take one batch into the stuck export.
    burst(&notifier, 50);
    while !gate.entered.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Now 50 fit in the queue again; the other 900 are dropped, the newest ones.
    burst(&notifier, 950);
    let before = exporter.stats();
    assert_eq!(before.dropped_queue_full, 900, "{before:?}");
    assert_eq!(before.exported, 0);
    gate.open();
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!((stats.exported, stats.dropped_queue_full), (100, 900), "{stats:?}");
    let spans = gate.spans.lock().unwrap();
    assert!(spans.iter().map(i_of).eq((0..50).chain(0..50)));
    assert_eq!(reports.lock().unwrap().len(), 1);
}

/// A sink that refuses every other batch and panics on the third.
#[derive(Debug, Default)]
struct Flaky {
    calls: AtomicUsize,
    accepted: Mutex<Vec<Arc<Event>>>,
}

#[derive(Debug)]
struct FlakyExporter(Arc<Flaky>);

impl Sink for FlakyExporter {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        let call = self.0.calls.fetch_add(1, Ordering::SeqCst);
        let result = match call {
            2 => panic!("collector exploded"),
            c if c % 2 == 1 => Err(SinkError::new("collector said 503")),
            _ => {
                self.0.accepted.lock().unwrap().extend(batch.iter().cloned());
                Ok(())
            }
        };
        ready(result)
    }
}

#[test]
fn refused_and_panicking_exports_are_counted_as_exporter_errors_and_the_thread_survives() {
    let flaky = Arc::new(Flaky::default());
    let (reports, hook) = report_sink();
    let exporter = Collector::builder("accounting", FlakyExporter(flaky.clone()))
        .max_batch_size(10)
        .on_drops(hook)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    // Five flushes of 10 events: calls 0 ok, 1 err, 2 panic, 3 err, 4 ok.
    for round in 0..5 {
        burst(&notifier, 10);
        let stats = exporter.force_flush(FLUSH).unwrap();
        assert_eq!(
            stats.exported + stats.dropped_exporter_error,
            10 * (round + 1),
            "{stats:?}"
        );
    }
    let stats = exporter.stats();
    assert_eq!((stats.exported, stats.dropped_exporter_error), (20, 30), "{stats:?}");
    assert_eq!(flaky.accepted.lock().unwrap().len(), 20);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 3, "one report per failed flush: {reports:?}");
    assert_eq!(
        reports
            .iter()
            .map(|r| r.burst.dropped_exporter_error)
            .collect::<Vec<_>>(),
        [10, 10, 10]
    );
    assert_eq!(reports[0].last_error.as_deref(), Some("collector said 503"));
    assert_eq!(reports[1].last_error.as_deref(), Some("panicked: collector exploded"));
    assert!(reports[0].to_string().contains("exporter error 10"), "{}", reports[0]);
}

#[test]
fn shutdown_exports_what_is_queued_then_counts_later_events_as_shutdown_drops() {
    let memory = Memory::default();
    let exporter = Collector::builder("accounting", memory.clone())
        .scheduled_delay(Duration::from_secs(3600))
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, 300);
    // Nothing exported yet: below a batch, long delay. Shutdown exports it all.
    let stats = exporter.shutdown(Duration::from_secs(30)).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (300, 0), "{stats:?}");
    burst(&notifier, 7);
    let stats = exporter.stats();
    assert_eq!(
        (stats.exported, stats.dropped_shutdown, stats.received()),
        (300, 7, 307)
    );
    assert_eq!(
        exporter.shutdown(Duration::from_secs(1)),
        Err(ExportError::ShutDown(stats))
    );
    assert_eq!(exporter.force_flush(FLUSH), Err(ExportError::ShutDown(stats)));
}

#[test]
fn a_flush_that_times_out_says_so_with_the_counters() {
    let gate = Gated::new();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone())).build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, 5);
    let error = exporter.force_flush(Duration::from_millis(50)).unwrap_err();
    assert!(
        matches!(error, ExportError::TimedOut(s) if s.exported == 0),
        "{error:?}"
    );
    gate.open();
    // The flush asked for above completes; a new one sees all five.
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (5, 0));
}

#[test]
fn a_queue_smaller_than_a_batch_still_wakes_the_exporter_thread() {
    let memory = Memory::default();
    let exporter = Collector::builder("accounting", memory.clone())
        .queue_capacity(10)
        .scheduled_delay(Duration::from_secs(3600))
        .overflow(Overflow::Block)
        .block_limit(Duration::from_secs(60))
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    let started = std::time::Instant::now();
    burst(&notifier, 1_000);
    // Without the batch clamped to the queue, each full queue waited for the hour-long delay (the
    // first wait timed out after 60 s and dropped).
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (1_000, 0), "{stats:?}");
}

#[test]
fn producers_waiting_on_a_full_queue_return_at_shutdown_counted() {
    let gate = Gated::new();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone()))
        .queue_capacity(1)
        .overflow(Overflow::Block)
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    // One event stuck in the export, one in this thread's queue; five producers fill their own
    // queue (each publishing thread has one, of `queue_capacity` events) and wait for room.
    burst(&notifier, 1);
    while !gate.entered.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    burst(&notifier, 1);
    let producers: Vec<_> = (0..5)
        .map(|_| {
            let notifier = notifier.clone();
            std::thread::spawn(move || burst(&notifier, 2))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    // The export is still stuck: the shutdown times out, but the waiting producers return.
    let error = exporter.shutdown(Duration::from_millis(100)).unwrap_err();
    assert!(matches!(error, ExportError::TimedOut(_)), "{error:?}");
    for producer in producers {
        producer.join().unwrap();
    }
    // The five that waited, and the six left in the queues when the timeout ran out (this
    // thread's second event, each producer's first).
    assert_eq!(exporter.stats().dropped_shutdown, 11, "{:?}", exporter.stats());
    // Released, the thread ends its current export and stops: all twelve accounted for.
    gate.open();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while exporter.stats().exported < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let stats = exporter.stats();
    assert_eq!(
        (stats.exported, stats.dropped_shutdown, stats.received()),
        (1, 11, 12),
        "{stats:?}"
    );
}

/// ExportError::TimedOut: "for a shutdown, the thread still stops after its current export and
/// counts what it leaves as dropped_shutdown". The stats attached to the error already count what
/// is queued (they did not: a hung exporter left those events in no counter at all).
#[test]
fn a_timed_out_shutdown_counts_what_is_queued_and_stops_after_the_current_export() {
    let gate = Gated::new();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone()))
        .max_batch_size(100)
        .on_drops(|_| {})
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, 1_000);
    while !gate.entered.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let started = std::time::Instant::now();
    let error = exporter.shutdown(Duration::from_millis(100)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let ExportError::TimedOut(at_timeout) = error else {
        panic!("{error:?}")
    };
    let in_flight = at_timeout.dequeued;
    assert!((1..=100).contains(&in_flight), "{at_timeout:?}");
    assert_eq!(at_timeout.received(), 1_000, "{at_timeout:?}");
    assert_eq!(
        (at_timeout.exported, at_timeout.dropped_shutdown),
        (0, 1_000 - in_flight),
        "{at_timeout:?}"
    );
    // The stuck export returns: its batch is exported, nothing after it.
    gate.open();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while exporter.stats().exported < in_flight && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let stats = exporter.stats();
    assert_eq!(
        (stats.exported, stats.dropped_shutdown, stats.received()),
        (in_flight, 1_000 - in_flight, 1_000),
        "{stats:?}"
    );
    assert_eq!(gate.spans.lock().unwrap().len() as u64, in_flight);
}

/// Each publishing thread hands events over through a queue of its own: a flush exports what
/// sits in the queue of a thread that is alive and idle, and of one that has exited; the
/// scheduled delay is long, so only the flush can have exported them.
#[test]
fn a_flush_exports_the_queues_of_idle_and_exited_threads() {
    let spans = Memory::default();
    let exporter = Collector::builder("accounting", spans.clone())
        .max_batch_size(1_000)
        .scheduled_delay(Duration::from_secs(3_600))
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);

    let exited = {
        let notifier = notifier.clone();
        std::thread::spawn(move || burst(&notifier, 3))
    };
    exited.join().unwrap();
    let (published_tx, published_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let idle = {
        let notifier = notifier.clone();
        std::thread::spawn(move || {
            burst(&notifier, 4);
            published_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
    };
    published_rx.recv().unwrap();
    assert_eq!(spans.len(), 0, "nothing exported before the flush");
    let stats = exporter.force_flush(FLUSH).unwrap();
    assert_eq!(
        (stats.exported, stats.dropped(), stats.received()),
        (7, 0, 7),
        "{stats:?}"
    );
    assert_eq!(spans.len(), 7);
    release_tx.send(()).unwrap();
    idle.join().unwrap();
}

/// A panic payload whose own `Drop` panics (`std::panic::panic_any(Bomb)`).
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("the payload's drop panics too");
        }
    }
}

/// Panics with a `Bomb` in `export`, in `shutdown` and in the drop hook.
#[derive(Debug)]
struct Bombs;

impl Sink for Bombs {
    fn export<'a>(&'a mut self, _batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        std::panic::panic_any(Bomb)
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        std::panic::panic_any(Bomb)
    }
}

#[test]
fn panic_payloads_whose_drop_panics_do_not_end_the_exporter_thread() {
    let exporter = Collector::builder("accounting", Bombs)
        .on_drops(|_| std::panic::panic_any(Bomb))
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    for round in 1..=3 {
        burst(&notifier, 10);
        // The thread ended with the first bomb: the flush said "shut down" at once, and the
        // events queued after it were in no counter.
        let stats = exporter
            .force_flush(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        assert_eq!(
            (stats.dropped_exporter_error, stats.received()),
            (10 * round, 10 * round)
        );
    }
    let stats = exporter.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!((stats.exported, stats.dropped_exporter_error), (0, 30), "{stats:?}");
}

/// Builds an exporter into memory with `configure`, publishes 1,000 events and asserts that all
/// of them are exported, none dropped.
fn a_burst_is_exported_whole(what: &str, configure: impl Fn(CollectorBuilder<Memory>) -> CollectorBuilder<Memory>) {
    let memory = Memory::default();
    let exporter = configure(Collector::builder("accounting", memory.clone())).build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    burst(&notifier, 1_000);
    let stats = exporter
        .force_flush(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!((stats.exported, stats.dropped()), (1_000, 0), "{what}: {stats:?}");
    assert_eq!(memory.len(), 1_000, "{what}");
}

/// `max_batch_size` is a bound, not an allocation: the exporter's thread reserved room for a whole
/// batch up front, so `usize::MAX` ended the thread at once (capacity overflow: every event then
/// sat in the queue in no counter, and flushes timed out) and `1 << 40` aborted the process
/// (an 8 TiB allocation).
#[test]
fn a_huge_max_batch_size_bounds_batches_without_reserving_them() {
    for batch in [usize::MAX, 1 << 40] {
        a_burst_is_exported_whole(&format!("batch {batch}"), |b| b.max_batch_size(batch));
    }
}

/// A queue capacity the allocator cannot give (`usize::MAX`: a panic in the first publishing
/// thread; `1 << 40`: an 8 TiB ring, which aborted the process) is clamped to
/// `Handoff::MAX_PER_THREAD`: the events are exported as usual.
#[test]
fn a_huge_queue_capacity_is_clamped_not_allocated() {
    for capacity in [usize::MAX, 1 << 40] {
        a_burst_is_exported_whole(&format!("capacity {capacity}"), |b| b.queue_capacity(capacity));
    }
}

/// A sink that only counts what it accepted.
#[derive(Clone, Debug, Default)]
struct Counting(Arc<std::sync::atomic::AtomicU64>);

impl Sink for Counting {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        Box::pin(async move {
            self.0.fetch_add(batch.len() as u64, Ordering::SeqCst);
            Ok(())
        })
    }
}

/// Four threads publish while another flushes in a loop and this one shuts down: under each
/// policy, every event ends exported (as the sink counted) or dropped by a cause, and
/// nothing is exported after `shutdown` returned.
#[test]
fn publishing_and_flushing_threads_racing_a_shutdown_account_for_every_event() {
    const PER_THREAD: u64 = 50_000;
    for policy in [Overflow::DropNewest, Overflow::DropOldest, Overflow::Block] {
        let counting = Counting::default();
        let exporter = Collector::builder("accounting", counting.clone())
            .overflow(policy)
            .queue_capacity(1_024)
            .on_drops(|_| {})
            .build();
        let notifier = Notifier::new();
        let _s = subscribe(&exporter, &notifier);
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let notifier = notifier.clone();
                std::thread::spawn(move || burst(&notifier, PER_THREAD))
            })
            .collect();
        let flusher = {
            let exporter = exporter.clone();
            std::thread::spawn(move || while exporter.force_flush(FLUSH).is_ok() {})
        };
        std::thread::sleep(Duration::from_millis(20));
        let at_shutdown = exporter.shutdown(Duration::from_secs(30)).unwrap();
        for producer in producers {
            producer.join().unwrap();
        }
        flusher.join().unwrap();
        let stats = exporter.stats();
        assert_eq!(stats.received(), 4 * PER_THREAD, "{policy:?}: {stats:?}");
        assert_eq!(
            stats.exported + stats.dropped(),
            4 * PER_THREAD,
            "{policy:?}: {stats:?}"
        );
        assert_eq!(stats.exported, at_shutdown.exported, "{policy:?}");
        assert_eq!(stats.exported, counting.0.load(Ordering::SeqCst), "{policy:?}");
    }
}

/// `Overflow::Block` with a `block_limit(bound)`: "Block the instrumenting thread until there is
/// room, at most this long per event". A blocked publisher slept a whole slice (`Handoff`'s
/// `BLOCK_SLICE`) before it first looked at its deadline, so a zero limit blocked a slice per
/// event; now it sleeps at most what is left of the bound, and a zero bound drops at once. Not a
/// performance figure but a bound on blocking, with a wide margin for a loaded machine.
#[test]
fn a_wait_bound_below_the_block_slice_is_kept() {
    let exporter = Collector::builder("accounting", Hung)
        .queue_capacity(16)
        .overflow(Overflow::Block)
        .block_limit(Duration::ZERO)
        .on_drops(|_| {})
        .build();
    let notifier = Notifier::new();
    let _s = subscribe(&exporter, &notifier);
    for _ in 0..100 {
        notifier.instrument("wait.open", Payload::new, |_| ());
    }
    let started = Instant::now();
    for _ in 0..200 {
        notifier.instrument("wait.open", Payload::new, |_| ());
    }
    let per_event = started.elapsed() / 200;
    assert!(exporter.stats().dropped_queue_full >= 200);
    assert!(
        per_event < Duration::from_micros(100),
        "a zero block limit blocked {per_event:?} per dropped event"
    );
}

/// A timed-out shutdown whose thread then releases held traces (tail sampling's `finish`): the
/// released events were taken from the queue (`dequeued`) and are counted `dropped_shutdown`, so
/// `received()` (`dequeued + dropped_queue_full + dropped_shutdown`) counted them twice.
#[test]
fn events_taken_then_given_up_at_a_timed_out_shutdown_are_received_once() {
    let gate = Gated::new();
    let exporter = Collector::builder("accounting", GatedExporter(gate.clone()))
        .tail_sampling(notify_export::TailSampling::new().ratio(1.0))
        .on_drops(|_| {})
        .build();
    // Three children whose root (on a notifier the exporter does not watch) never reaches it:
    // held by tail sampling.
    let notifier = Notifier::new();
    let _s = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(|_: &notify_core::Event| {}),
    );
    let now = Instant::now();
    let event = |name: &'static str| Arc::new(notify_core::Event::new(name, now, now, Payload::new()));
    notifier.instrument("root.tail", Payload::new, |_| {
        (0..3).for_each(|_| {
            exporter.push(&event("child.tail"));
        });
    });
    let flushed = exporter.force_flush(FLUSH).unwrap();
    assert_eq!((flushed.dequeued, flushed.held), (3, 3), "{flushed:?}");
    // A root of its own: kept and exported, into the closed gate.
    exporter.push(&event("solo.tail"));
    while !gate.entered.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let Err(ExportError::TimedOut(_)) = exporter.shutdown(Duration::from_millis(50)) else {
        panic!("the export is stuck: the shutdown times out")
    };
    gate.open();
    let deadline = Instant::now() + Duration::from_secs(30);
    while exporter.stats().exported + exporter.stats().dropped() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let stats = exporter.stats();
    assert_eq!(
        (stats.exported, stats.dropped_shutdown, stats.held, stats.dequeued),
        (1, 3, 0, 4),
        "{stats:?}"
    );
    assert_eq!(stats.received(), stats.exported + stats.dropped(), "{stats:?}");
}
