//! The contract every [`Sink`] passes (feature `testing`): [`check_sink`].
//!
//! What the collector does (queues, tail sampling, accounting, flush and shutdown) is tested
//! once, in this crate. What is left for each exporter is its sink: that each event it is given
//! reaches its far end once, whole (name, ids, parent, trace, error), whatever the batch
//! boundaries, and that flush and shutdown reach it. Each exporter crate runs [`check_sink`] once
//! against its real back end (an in-memory `SpanExporter`, a real OTLP receiver, nats-server, the
//! live page's store), with a closure that reads back what arrived there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::event::EventId;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber, TraceId};

use crate::{Collector, ExportRuntime, ExportStats, Sink, SinkFuture};

/// What a sink's far end shows of one event: the fields every exporter must carry over exactly.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seen {
    /// The event's name (an OpenTelemetry span's name).
    pub name: String,
    /// The event id (the span id).
    pub id: EventId,
    /// The parent event's id (the parent span id), `None` for a root.
    pub parent_id: Option<EventId>,
    /// The trace id.
    pub trace_id: TraceId,
    /// Whether the event is an error (an exception in its payload, or a panic): an OpenTelemetry
    /// span's status is `Error`.
    pub error: bool,
}

impl Seen {
    /// What `event` must look like at the far end.
    pub fn of(event: &Event) -> Seen {
        Seen {
            name: event.name().to_owned(),
            id: event.id(),
            parent_id: event.parent_id(),
            trace_id: event.trace_id(),
            error: crate::is_error(event),
        }
    }
}

/// What [`check_sink`] found, for the caller's own assertions.
#[derive(Clone, Debug)]
pub struct ContractReport {
    /// The events published, as the far end must show them.
    pub published: Vec<Seen>,
    /// The collector's counters after the shutdown.
    pub stats: ExportStats,
    /// The sizes of the batches the sink was given.
    pub batches: Vec<usize>,
}

/// Events the contract publishes: 3 threads, 4 traces each of a root, two children and a
/// grandchild under the second child; one child of each trace fails.
pub const CONTRACT_EVENTS: usize = 3 * 4 * 4;

/// The batch size the contract's collector cuts (not a divisor of [`CONTRACT_EVENTS`]: the last
/// batch is a partial one).
pub const CONTRACT_BATCH: usize = 5;

/// Runs the sink contract: `sink` behind a collector (batches of [`CONTRACT_BATCH`], the given
/// `runtime`) receives [`CONTRACT_EVENTS`] events published on 3 threads; `read` is called
/// (again and again, up to 30 s, until it returns as many) to read back what reached the sink's
/// far end. Asserts, panicking with a message on failure:
///
/// * every event published arrives once, with its name, id, parent id, trace id and error
///   status ([`Seen`]), and nothing else arrives;
/// * the collector counts them all `exported` after a flush, none dropped;
/// * batches are never empty nor above [`CONTRACT_BATCH`];
/// * `flush` reaches the sink with each force flush, `shutdown` once, last; an event pushed after
///   the shutdown is counted `dropped_shutdown` and never reaches the sink.
///
/// # Panics
/// When the sink breaks the contract (the message says how).
pub fn check_sink<S: Sink>(
    sink: S,
    runtime: impl Into<ExportRuntime>,
    mut read: impl FnMut() -> Vec<Seen>,
) -> ContractReport {
    let probe = Arc::new(Probe::default());
    let collector = Collector::builder(
        "contract",
        Checked {
            inner: sink,
            probe: probe.clone(),
        },
    )
    .max_batch_size(CONTRACT_BATCH)
    .scheduled_delay(Duration::from_millis(20))
    .runtime(runtime)
    .build();
    let notifier = Notifier::new();
    let published = Arc::new(std::sync::Mutex::new(Vec::new()));
    let _seen = notifier.subscribe(Pattern::all(), {
        let published = published.clone();
        Subscriber::event(move |e: &Event| published.lock().unwrap().push(Seen::of(e)))
    });
    let subscription = notifier.subscribe(Pattern::all(), Subscriber::owned(Push(collector.clone())));
    collector.report_through(&subscription);
    std::thread::scope(|scope| {
        for thread in 0..3_u64 {
            let notifier = &notifier;
            scope.spawn(move || {
                for trace in 0..4_u64 {
                    notifier.instrument(
                        "request.contract",
                        || Payload::new().with("thread", thread),
                        |_| {
                            notifier.instrument("query.contract", || Payload::new().with("trace", trace), |_| ());
                            let _ = notifier.instrument_result(
                                "call.contract",
                                Payload::new,
                                |_| -> Result<(), std::io::Error> {
                                    notifier.instrument("inner.contract", Payload::new, |_| ());
                                    Err(std::io::Error::other("refused"))
                                },
                            );
                        },
                    );
                }
            });
        }
    });
    let stats = match collector.force_flush(Duration::from_secs(30)) {
        Ok(stats) => stats,
        Err(error) => panic!("sink contract: force_flush failed: {error}"),
    };
    assert!(
        probe.flushes.load(Ordering::SeqCst) >= 1,
        "sink contract: force_flush did not reach Sink::flush"
    );
    assert_eq!(
        (stats.exported, stats.dropped()),
        (CONTRACT_EVENTS as u64, 0),
        "sink contract: every event accepted, none dropped ({stats})"
    );
    let mut published = std::mem::take(&mut *published.lock().unwrap());
    published.sort();
    assert_eq!(published.len(), CONTRACT_EVENTS);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut arrived = read();
    while arrived.len() < CONTRACT_EVENTS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        arrived = read();
    }
    arrived.sort();
    let mut counts = BTreeMap::new();
    for seen in &arrived {
        *counts.entry(seen.id).or_insert(0_usize) += 1;
    }
    if let Some((id, n)) = counts.iter().find(|(_, n)| **n > 1) {
        panic!("sink contract: event {id:?} arrived {n} times");
    }
    assert_eq!(
        arrived, published,
        "sink contract: what arrived is what was published, field for field"
    );

    let stats = match collector.shutdown(Duration::from_secs(30)) {
        Ok(stats) => stats,
        Err(error) => panic!("sink contract: shutdown failed: {error}"),
    };
    assert_eq!(
        probe.shutdowns.load(Ordering::SeqCst),
        1,
        "sink contract: Sink::shutdown called once"
    );
    notifier.instrument("late.contract", Payload::new, |_| ());
    let after = collector.stats();
    assert_eq!(
        after.dropped_shutdown,
        stats.dropped_shutdown + 1,
        "sink contract: an event after shutdown is counted"
    );
    assert!(
        !probe.after_shutdown.load(Ordering::SeqCst),
        "sink contract: nothing reaches the sink after its shutdown"
    );
    let batches = std::mem::take(&mut *probe.batches.lock().unwrap());
    assert!(
        batches.iter().all(|&n| (1..=CONTRACT_BATCH).contains(&n)),
        "sink contract: batch sizes {batches:?} within 1..={CONTRACT_BATCH}"
    );
    ContractReport {
        published,
        stats: after,
        batches,
    }
}

/// The subscription: hands every event to the collector.
struct Push(Collector);

impl OwnedEventSubscriber for Push {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.push(event);
    }
}

/// What [`Checked`] saw the collector do to the sink.
#[derive(Default)]
struct Probe {
    batches: std::sync::Mutex<Vec<usize>>,
    flushes: AtomicUsize,
    shutdowns: AtomicUsize,
    after_shutdown: AtomicBool,
}

/// The sink under test, watched.
struct Checked<S> {
    inner: S,
    probe: Arc<Probe>,
}

impl<S: Sink> Sink for Checked<S> {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.probe.batches.lock().unwrap().push(batch.len());
        self.note_after_shutdown();
        self.inner.export(batch)
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        self.probe.flushes.fetch_add(1, Ordering::SeqCst);
        self.note_after_shutdown();
        self.inner.flush()
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        self.note_after_shutdown();
        self.probe.shutdowns.fetch_add(1, Ordering::SeqCst);
        self.inner.shutdown()
    }

    fn pipeline(&mut self, settle: crate::Settle) -> bool {
        self.inner.pipeline(settle)
    }
}

impl<S> Checked<S> {
    fn note_after_shutdown(&self) {
        if self.probe.shutdowns.load(Ordering::SeqCst) > 0 {
            self.probe.after_shutdown.store(true, Ordering::SeqCst);
        }
    }
}
