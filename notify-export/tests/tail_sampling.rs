//! The tail-sampling stage ([`notify_export::TailSampler`]) on its own: a synthetic mix keeps
//! exactly the error and slow traces, whole, and counts the rest; the bounds (traces in flight,
//! events per trace, wait) each drop and count by cause; a remote-parented root decides its trace.
//! `on_the_collector` below runs the stage in a collector, as every exporter (notify-opentelemetry,
//! notify-nats, notify-web) uses it: the mix is tested here once, not per exporter.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::context::TransactionId;
use notify_core::event::{EventId, Outcome};
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber, TraceId};
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

// Issue 44 item 3: a trace with several local roots is decided part by part (the rule is on
// `TailSampler`): no decision drops an error or a slow root that comes after it.

/// A synthetic finished event of trace `trace` with id `id` under `parent` (local), lasting `ms`.
fn event(trace: u128, id: u64, parent: Option<u64>, ms: u64, outcome: Outcome) -> Arc<Event> {
    let now = Instant::now();
    let event = Event::new("op.tail", now, now + Duration::from_millis(ms), Payload::new())
        .with_ids(EventId::new(id), parent.map(EventId::new), TransactionId::new(1))
        .with_trace_id(TraceId::new(trace).unwrap())
        .with_outcome(outcome);
    Arc::new(event)
}

fn ok(trace: u128, id: u64, parent: Option<u64>) -> Arc<Event> {
    event(trace, id, parent, 0, Outcome::Completed)
}

fn ids(events: &[Arc<Event>]) -> Vec<u64> {
    events.iter().map(|e| e.id().get()).collect()
}

/// Two requests of one trace (a caller calling this service twice with one traceparent): the
/// first is fast and fine, the second panics after its query.
fn two_requests_of_one_trace() -> Vec<Arc<Event>> {
    let header: notify_core::trace_context::TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        .parse()
        .unwrap();
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    notify_core::Context::from_traceparent(&header).in_scope(|| {
        notifier.instrument("request.tail", Payload::new, |_| {
            notifier.instrument("query.tail", Payload::new, |_| ());
        })
    });
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notify_core::Context::from_traceparent(&header).in_scope(|| {
            notifier.instrument("request.tail", Payload::new, |_| {
                notifier.instrument("query.tail", Payload::new, |_| ());
                panic!("the second request fails");
            })
        })
    }));
    assert!(panicked.is_err());
    let events = std::mem::take(&mut *collect.0.lock().unwrap());
    assert_eq!(events.len(), 4);
    assert!(events.iter().all(|e| e.trace_id() == events[0].trace_id()));
    assert!(events[1].parent_is_remote() && events[3].parent_is_remote());
    events
}

#[test]
fn i44_3_error_after_ok_root_keeps_trace() {
    let events = two_requests_of_one_trace();
    let mut sampler = TailSampler::new(TailSampling::new());
    let mut kept = Vec::new();
    offer_all(&mut sampler, &events, Instant::now(), &mut kept);
    // The first request is dropped (fast, fine); the second is kept whole: its query, then itself.
    assert_eq!(ids(&kept), ids(&events[2..]));
    assert_eq!(kept[1].outcome(), Outcome::Panicked);
    let stats = sampler.stats();
    assert_eq!(
        (stats.traces_dropped, stats.dropped_not_sampled, stats.traces_kept_error),
        (1, 2, 1)
    );
    assert_eq!(
        (
            stats.kept,
            stats.kept_late,
            stats.dropped_late,
            stats.dropped(),
            stats.held
        ),
        (2, 0, 0, 2, 0)
    );
    assert_eq!((stats.offered(), sampler.traces_held()), (4, 0));
}

#[test]
fn i44_3_a_drop_takes_only_the_roots_part_held_events_of_another_root_stay() {
    // Two requests of trace 9 run at once: root 1 (id 1) with a query (10) and its row (11),
    // root 2 (id 2) with a query (20) that finished before root 1 did.
    let mut sampler = TailSampler::new(TailSampling::new());
    let mut kept = Vec::new();
    let now = Instant::now();
    for e in [
        ok(9, 20, Some(2)),
        ok(9, 11, Some(10)),
        ok(9, 10, Some(1)),
        ok(9, 1, None),
    ] {
        sampler.offer(e, now, &mut kept);
    }
    // Root 1 dropped itself, its query and its row; root 2's query still waits for root 2.
    assert!(kept.is_empty());
    assert_eq!((sampler.traces_held(), sampler.stats().held), (1, 1));
    assert_eq!(
        (sampler.stats().traces_dropped, sampler.stats().dropped_not_sampled),
        (1, 3)
    );
    sampler.offer(event(9, 2, None, 0, Outcome::Panicked), now, &mut kept);
    assert_eq!(ids(&kept), [20, 2]);
    let stats = sampler.stats();
    assert_eq!((stats.traces_kept_error, stats.kept, stats.held), (1, 2, 0));
    assert_eq!((stats.dropped(), stats.offered()), (3, 5));
    // Kept from now on: a late event of the trace is kept at once.
    sampler.offer(ok(9, 30, Some(3)), now, &mut kept);
    assert_eq!((sampler.stats().kept_late, kept.len()), (1, 3));
}

#[test]
fn i44_3_a_later_slow_root_keeps_its_part_a_later_fast_one_drops_it_as_late() {
    let mut sampler = TailSampler::new(TailSampling::new().slower_than(Duration::from_millis(100)));
    let mut kept = Vec::new();
    let now = Instant::now();
    // Root 1 fast: dropped. Root 2 fast too: its part is dropped, as late (the trace counted once).
    for e in [ok(5, 10, Some(1)), ok(5, 1, None), ok(5, 20, Some(2)), ok(5, 2, None)] {
        sampler.offer(e, now, &mut kept);
    }
    assert!(kept.is_empty());
    let stats = sampler.stats();
    assert_eq!(
        (stats.traces_dropped, stats.dropped_not_sampled, stats.dropped_late),
        (1, 2, 2)
    );
    // Root 3 slow: its part is kept whole.
    sampler.offer(ok(5, 30, Some(3)), now, &mut kept);
    sampler.offer(event(5, 3, None, 150, Outcome::Completed), now, &mut kept);
    assert_eq!(ids(&kept), [30, 3]);
    let stats = sampler.stats();
    assert_eq!((stats.traces_kept_slow, stats.kept, stats.held), (1, 2, 0));
    assert_eq!((stats.dropped(), stats.offered()), (4, 6));
}

#[test]
fn i44_3_a_late_child_of_a_dropped_root_is_dropped_at_once_unless_it_is_an_error() {
    let mut sampler = TailSampler::new(TailSampling::new());
    let mut kept = Vec::new();
    let now = Instant::now();
    sampler.offer(ok(7, 1, None), now, &mut kept);
    // Detached tasks of root 1 finishing after it: a fine one is dropped at once (not held until
    // max_wait), a failing one is kept at once and the trace is kept from then on.
    sampler.offer(ok(7, 10, Some(1)), now, &mut kept);
    assert_eq!((sampler.traces_held(), sampler.stats().dropped_late), (0, 1));
    sampler.offer(event(7, 11, Some(1), 0, Outcome::Panicked), now, &mut kept);
    assert_eq!(ids(&kept), [11]);
    sampler.offer(ok(7, 12, Some(1)), now, &mut kept);
    assert_eq!(ids(&kept), [11, 12]);
    let stats = sampler.stats();
    assert_eq!(
        (
            stats.traces_dropped,
            stats.traces_kept_error,
            stats.kept,
            stats.kept_late
        ),
        (1, 1, 2, 1)
    );
    assert_eq!(
        (
            stats.dropped_not_sampled,
            stats.dropped_late,
            stats.held,
            stats.offered()
        ),
        (1, 1, 0, 4)
    );
}

#[test]
fn i44_3_an_error_keeps_the_held_part_of_a_dropped_trace_and_an_evicted_trace_keeps_errors() {
    let mut sampler = TailSampler::new(TailSampling::new().max_traces(1));
    let mut kept = Vec::new();
    let now = Instant::now();
    // Trace 3: root 1 dropped; a later part (query 20 of root 2) is held; then a detached task of
    // root 1 fails: it is kept with the held query.
    sampler.offer(ok(3, 1, None), now, &mut kept);
    sampler.offer(ok(3, 20, Some(2)), now, &mut kept);
    assert_eq!(sampler.stats().held, 1);
    sampler.offer(event(3, 10, Some(1), 0, Outcome::Cancelled), now, &mut kept);
    assert_eq!(ids(&kept), [20, 10]);
    assert_eq!((sampler.stats().held, sampler.traces_held()), (0, 0));
    // Trace 4 is evicted by trace 6 (max_traces 1); of its later events the fine one is dropped
    // as evicted, the failing root is kept.
    kept.clear();
    sampler.offer(ok(4, 40, Some(4)), now, &mut kept);
    sampler.offer(ok(6, 60, Some(6)), now, &mut kept);
    sampler.offer(ok(4, 41, Some(4)), now, &mut kept);
    sampler.offer(event(4, 4, None, 0, Outcome::Panicked), now, &mut kept);
    assert_eq!(ids(&kept), [4]);
    let stats = sampler.stats();
    assert_eq!(
        (stats.traces_evicted, stats.dropped_evicted, stats.traces_kept_error),
        (1, 2, 2)
    );
    assert_eq!((stats.kept, stats.held, stats.offered()), (3, 1, 7));
}

#[test]
fn i44_3_parent_ids_in_a_cycle_stay_held_and_expire_as_late() {
    // Foreign ids (an importer) may name each other as parents: 31 under 32 under 31.
    let wait = Duration::from_secs(5);
    let mut sampler = TailSampler::new(TailSampling::new().max_wait(wait));
    let mut kept = Vec::new();
    let now = Instant::now();
    for e in [
        ok(8, 31, Some(32)),
        ok(8, 32, Some(31)),
        ok(8, 10, Some(1)),
        ok(8, 1, None),
    ] {
        sampler.offer(e, now, &mut kept);
    }
    let stats = sampler.stats();
    assert_eq!(
        (stats.dropped_not_sampled, stats.held, sampler.traces_held()),
        (2, 2, 1)
    );
    sampler.expire(now + wait, &mut kept);
    let stats = sampler.stats();
    assert!(kept.is_empty());
    assert_eq!(
        (
            stats.dropped_late,
            stats.traces_expired,
            stats.traces_dropped,
            stats.held
        ),
        (2, 0, 1, 0)
    );
    assert_eq!(stats.offered(), 4);
}

/// Issue 48: `TailSampling::keeps_for_sure` never says "kept" of an event whose trace the sampler
/// then drops (what an exemplar relies on), over a mix of errors, slow roots, slow children and
/// the ratio; and it does say so for every error, slow root and trace in the ratio.
#[test]
fn i48_keeps_for_sure_agrees_with_the_samplers_decision() {
    let policy = TailSampling::new().slower_than(Duration::from_millis(20)).ratio(0.3);
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    let mut mix = Vec::new();
    for n in 0..60_u32 {
        notifier.instrument("root.tail", Payload::new, |_| {
            let _ = notifier.instrument_result("child.tail", Payload::new, |_| {
                if n % 7 == 0 {
                    Err("refused")
                } else {
                    Ok(())
                }
            });
            if n % 5 == 0 {
                // A slow child: slowness counts only for the local root.
                notifier.instrument("slow_child.tail", Payload::new, |_| {
                    std::thread::sleep(Duration::from_millis(25))
                });
            } else if n % 11 == 0 {
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        mix.push(std::mem::take(&mut *collect.0.lock().unwrap()));
    }
    let mut sampler = TailSampler::new(policy.clone());
    let now = Instant::now();
    let (mut sure, mut kept_traces) = (0, 0);
    for events in &mix {
        let mut kept = Vec::new();
        offer_all(&mut sampler, events, now, &mut kept);
        let trace_kept = !kept.is_empty();
        kept_traces += usize::from(trace_kept);
        for event in events {
            if policy.keeps_for_sure(event) {
                sure += 1;
                assert!(trace_kept, "{} said kept, trace dropped", event.name());
            }
        }
        let root = events.last().unwrap();
        // Every reason the sampler keeps a trace for is seen on some event of it.
        assert_eq!(
            trace_kept,
            events.iter().any(|e| policy.keeps_for_sure(e)),
            "{:?}",
            root.trace_id()
        );
    }
    assert!(
        sure > 0 && kept_traces > 0 && kept_traces < mix.len(),
        "{sure} {kept_traces}"
    );
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
