//! The tail-sampling stage ([`notify_export::TailSampler`]) on its own: a synthetic mix keeps
//! exactly the error and slow traces, whole, and counts the rest; the bounds (traces in flight,
//! events per trace, wait) each drop and count by cause; a remote-parented root decides its trace.
//! `on_the_collector` below runs the stage in a collector (what notify-opentelemetry exports
//! through); notify-nats and notify-web still test the same mix through loops of their own (they
//! are not on the collector yet).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
use notify_export::{is_error, TailSampler, TailSampling};

/// Collects the shared events a notifier publishes.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Arc<Event>>>>);

impl OwnedEventSubscriber for Collect {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// The events of `traces` traces of `children` children each, children first then the root, per
/// trace.
fn traces(count: usize, children: usize) -> Vec<Vec<Arc<Event>>> {
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    (0..count)
        .map(|_| {
            notifier.instrument("root.tail", Payload::new, |_| {
                for _ in 0..children {
                    notifier.instrument("child.tail", Payload::new, |_| ());
                }
            });
            std::mem::take(&mut *collect.0.lock().unwrap())
        })
        .collect()
}

fn offer_all(sampler: &mut TailSampler, events: &[Arc<Event>], now: Instant, kept: &mut Vec<Arc<Event>>) {
    for event in events {
        sampler.offer(event.clone(), now, kept);
    }
}

#[test]
fn a_synthetic_mix_keeps_exactly_the_error_and_slow_traces_whole_and_counts_the_rest() {
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    let errors = [7_u64, 42, 77];
    let slow = [13_u64, 55];
    for n in 0..100_u64 {
        notifier.instrument(
            "request.tail",
            || Payload::new().with("n", n),
            |_| {
                notifier.instrument("auth.tail", || Payload::new().with("n", n), |_| ());
                let _ = notifier.instrument_result(
                    "query.tail",
                    || Payload::new().with("n", n),
                    |_| {
                        if errors.contains(&n) {
                            Err("refused")
                        } else {
                            Ok(())
                        }
                    },
                );
                if slow.contains(&n) {
                    std::thread::sleep(Duration::from_millis(40));
                }
            },
        );
    }
    let events = std::mem::take(&mut *collect.0.lock().unwrap());
    assert_eq!(events.len(), 300);
    let mut sampler = TailSampler::new(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0));
    let mut kept = Vec::new();
    offer_all(&mut sampler, &events, Instant::now(), &mut kept);
    let mut kept_n: Vec<u64> = kept
        .iter()
        .map(|e| match e.payload().get("n") {
            Some(notify_core::Value::U64(n)) => *n,
            other => panic!("{other:?}"),
        })
        .collect();
    kept_n.sort_unstable();
    kept_n.dedup();
    assert_eq!(kept_n, [7, 13, 42, 55, 77]);
    assert_eq!(kept.len(), 5 * 3, "each kept trace whole");
    assert_eq!(kept.iter().filter(|e| is_error(e)).count(), 3);
    let stats = sampler.stats();
    assert_eq!(
        (
            stats.traces_kept_error,
            stats.traces_kept_slow,
            stats.traces_kept_ratio,
            stats.traces_dropped
        ),
        (3, 2, 0, 95)
    );
    assert_eq!(
        (stats.kept, stats.dropped_not_sampled, stats.dropped(), stats.held),
        (15, 285, 285, 0)
    );
    assert_eq!(stats.offered(), 300);
    assert_eq!(sampler.next_expiry(), None);
}

#[test]
fn a_full_sampler_evicts_the_oldest_trace_and_drops_its_late_events_as_evicted() {
    let mut sampler = TailSampler::new(TailSampling::new().ratio(1.0).max_traces(2));
    let traces = traces(3, 2);
    let now = Instant::now();
    let mut kept = Vec::new();
    // The children of three traces, no roots yet: the third evicts the first.
    for t in &traces {
        offer_all(&mut sampler, &t[..2], now, &mut kept);
    }
    assert_eq!(sampler.traces_held(), 2);
    // The roots: the evicted trace's root is dropped too; the others are kept whole.
    for t in &traces {
        sampler.offer(t[2].clone(), now, &mut kept);
    }
    assert_eq!(kept.len(), 6);
    assert!(kept.iter().all(|e| e.trace_id() != traces[0][0].trace_id()));
    let stats = sampler.stats();
    assert_eq!(
        (stats.traces_evicted, stats.dropped_evicted, stats.traces_kept_ratio),
        (1, 3, 2)
    );
    assert_eq!((stats.kept, stats.held, stats.offered()), (6, 0, 9));
}

#[test]
fn events_beyond_the_per_trace_limit_are_dropped_and_counted_the_root_still_decides() {
    let mut sampler = TailSampler::new(TailSampling::new().ratio(1.0).max_events_per_trace(3));
    let t = &traces(1, 5)[0];
    let mut kept = Vec::new();
    offer_all(&mut sampler, t, Instant::now(), &mut kept);
    let stats = sampler.stats();
    assert_eq!(
        (stats.kept, stats.dropped_over_limit, stats.traces_kept_ratio),
        (4, 2, 1)
    );
    assert_eq!(kept.last().unwrap().name(), "root.tail");
    assert_eq!(stats.offered(), 6);
}

#[test]
fn a_trace_whose_root_does_not_come_expires_after_max_wait_and_late_events_follow_the_decision() {
    let wait = Duration::from_secs(5);
    let mut sampler = TailSampler::new(TailSampling::new().max_wait(wait));
    let plain = &traces(1, 2)[0];
    let failing = {
        let notifier = Notifier::new();
        let collect = Collect::default();
        let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
        notifier.instrument("root.tail", Payload::new, |_| {
            let _ = notifier.instrument_result("child.tail", Payload::new, |_| Err::<(), _>("refused"));
        });
        let events = collect.0.lock().unwrap().clone();
        events
    };
    let start = Instant::now();
    let mut kept = Vec::new();
    offer_all(&mut sampler, &plain[..2], start, &mut kept);
    sampler.offer(failing[0].clone(), start, &mut kept);
    sampler.expire(start + wait - Duration::from_millis(1), &mut kept);
    assert_eq!((sampler.traces_held(), sampler.stats().held), (2, 3));
    sampler.expire(start + wait, &mut kept);
    // The plain trace is dropped as expired, the failing one kept; their roots come late.
    assert_eq!(kept.len(), 1);
    sampler.offer(plain[2].clone(), start + wait, &mut kept);
    sampler.offer(failing[1].clone(), start + wait, &mut kept);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].name(), "root.tail");
    let stats = sampler.stats();
    assert_eq!(
        (
            stats.traces_kept_error,
            stats.traces_expired,
            stats.kept,
            stats.kept_late
        ),
        (1, 2, 2, 1)
    );
    assert_eq!(
        (stats.dropped_expired, stats.dropped_late, stats.dropped(), stats.held),
        (2, 1, 3, 0)
    );
    assert_eq!(
        (stats.traces_kept_slow, stats.traces_kept_ratio, stats.traces_dropped),
        (0, 0, 0)
    );
    assert_eq!(stats.offered(), 5);
}

#[test]
fn a_local_root_with_a_remote_parent_decides_its_trace() {
    // A request that arrived with a traceparent: its root has a parent, in another process.
    let header: notify_core::trace_context::TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        .parse()
        .unwrap();
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    notify_core::Context::from_traceparent(&header).in_scope(|| {
        notifier.instrument("request.tail", Payload::new, |_| {
            let _ = notifier.instrument_result("query.tail", Payload::new, |_| Err::<(), _>("refused"));
        });
    });
    let events = collect.0.lock().unwrap().clone();
    assert!(events[1].parent_is_remote() && events[1].parent_id().is_some());
    let mut sampler = TailSampler::new(TailSampling::new());
    let mut kept = Vec::new();
    offer_all(&mut sampler, &events, Instant::now(), &mut kept);
    // Decided at once (not held until max_wait), kept whole for its error.
    assert_eq!((kept.len(), sampler.traces_held()), (2, 0));
    assert_eq!(sampler.stats().traces_kept_error, 1);
}

// The stage on the collector: what it keeps is exported whole, the rest counted, a shutdown
// decides what is held. (These ran against notify-opentelemetry's exporter before it sat on the
// collector; notify-opentelemetry keeps only the ratio's comparison with the SDK's sampler.)

mod on_the_collector {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber, Value};
    use notify_export::{ready, Collector, Sink, SinkFuture, TailSampling};

    #[derive(Clone, Default)]
    struct Memory(Arc<Mutex<Vec<Arc<Event>>>>);

    impl Sink for Memory {
        fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
            self.0.lock().unwrap().extend(batch.iter().cloned());
            ready(Ok(()))
        }
    }

    struct Push(Collector);

    impl OwnedEventSubscriber for Push {
        fn deliver(&self, event: &Arc<Event>) {
            self.0.push(event);
        }
    }

    /// Publishes trace `n`: a root `request.tail` with three children.
    fn trace(notifier: &Notifier, n: u64, error: bool, slow: bool) {
        notifier.instrument(
            "request.tail",
            || Payload::new().with("n", n),
            |_| {
                notifier.instrument("auth.tail", || Payload::new().with("n", n), |_| ());
                let _ = notifier.instrument_result(
                    "query.tail",
                    || Payload::new().with("n", n),
                    |_| if error { "x".parse::<u8>().map(drop) } else { Ok(()) },
                );
                notifier.instrument("render.tail", || Payload::new().with("n", n), |_| ());
                if slow {
                    std::thread::sleep(Duration::from_millis(40));
                }
            },
        );
    }

    const ERRORS: [u64; 3] = [7, 42, 77];
    const SLOW: [u64; 2] = [13, 55];

    #[test]
    fn a_synthetic_mix_keeps_exactly_the_error_and_slow_traces_whole_and_counts_the_rest() {
        let memory = Memory::default();
        let collector = Collector::builder("tail", memory.clone())
            .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0))
            .build();
        let notifier = Notifier::new();
        let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(Push(collector.clone())));
        for n in 0..100 {
            trace(&notifier, n, ERRORS.contains(&n), SLOW.contains(&n));
        }
        let stats = collector.force_flush(Duration::from_secs(30)).unwrap();
        assert_eq!(stats.exported, 5 * 4, "{stats:?}");
        assert_eq!(stats.dropped_tail_sampling, 95 * 4, "{stats:?}");
        assert_eq!((stats.dropped(), stats.held, stats.received()), (95 * 4, 0, 400));
        let tail = collector.tail_stats().expect("tail sampling is on");
        assert_eq!(
            (
                tail.traces_kept_error,
                tail.traces_kept_slow,
                tail.traces_kept_ratio,
                tail.traces_dropped
            ),
            (3, 2, 0, 95)
        );
        assert_eq!((tail.kept, tail.dropped_not_sampled, tail.dropped()), (20, 380, 380));

        // Exactly those traces, each whole: a root and its three children.
        let events = memory.0.lock().unwrap().clone();
        let mut traces: BTreeMap<u64, Vec<Arc<Event>>> = BTreeMap::new();
        for event in events {
            let Some(Value::U64(n)) = event.payload().get("n").cloned() else {
                panic!("{event:?}")
            };
            traces.entry(n).or_default().push(event);
        }
        assert_eq!(traces.keys().copied().collect::<Vec<_>>(), [7, 13, 42, 55, 77]);
        for events in traces.values() {
            let root = events.iter().find(|e| e.parent_id().is_none()).unwrap();
            let mut names: Vec<_> = events.iter().map(|e| e.name().to_owned()).collect();
            names.sort();
            assert_eq!(names, ["auth.tail", "query.tail", "render.tail", "request.tail"]);
            assert!(events.iter().all(|e| e.trace_id() == root.trace_id()));
        }
    }

    #[test]
    fn shutdown_decides_held_traces_and_exports_the_kept_ones() {
        let memory = Memory::default();
        let collector = Collector::builder("tail", memory.clone())
            .tail_sampling(TailSampling::new().ratio(1.0))
            .build();
        // Children whose root never finishes before shutdown: held, then decided by the ratio.
        let notifier = Notifier::new();
        let _s = notifier.subscribe(Pattern::all(), Subscriber::event(|_: &Event| {}));
        let now = std::time::Instant::now();
        notifier.instrument("root.tail", Payload::new, |_| {
            for _ in 0..3 {
                collector.push(&Arc::new(Event::new("child.tail", now, now, Payload::new())));
            }
        });
        let flushed = collector.force_flush(Duration::from_secs(30)).unwrap();
        assert_eq!((flushed.exported, flushed.held), (0, 3), "{flushed:?}");
        let stats = collector.shutdown(Duration::from_secs(30)).unwrap();
        assert_eq!((stats.exported, stats.held, stats.dropped()), (3, 0, 0), "{stats:?}");
        assert_eq!(collector.tail_stats().unwrap().traces_expired, 1);
        assert_eq!(memory.0.lock().unwrap().len(), 3);
    }
}
