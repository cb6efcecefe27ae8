//! Tail sampling: exactly the error and slow traces of a synthetic mix are exported, whole, and
//! every other event is counted; the sampler's bounds (traces in flight, events per trace, wait)
//! each drop and count by cause; the ratio decides as OpenTelemetry's TraceIdRatioBased does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
use notify_opentelemetry::tail::{TailSampler, TailSampling};
use notify_opentelemetry::{trace_id, OpenTelemetryExporter};
use opentelemetry::trace::{SpanId, SpanKind};
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SamplingDecision, ShouldSample};

/// Publishes trace `n`: a root `request.tail` with three children; trace kinds by `n`.
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
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::builder(memory.clone())
        .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0))
        .build();
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for n in 0..100 {
        trace(&notifier, n, ERRORS.contains(&n), SLOW.contains(&n));
    }
    let stats = exporter.force_flush().unwrap();
    assert_eq!(stats.exported, 5 * 4, "{stats:?}");
    assert_eq!(stats.dropped_tail_sampling, 95 * 4, "{stats:?}");
    assert_eq!((stats.dropped(), stats.held, stats.received()), (95 * 4, 0, 400));
    let tail = exporter.tail_stats().expect("tail sampling is on");
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
    let spans = memory.get_finished_spans().unwrap();
    let mut traces: BTreeMap<i64, Vec<_>> = BTreeMap::new();
    for span in &spans {
        let n = span
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == "n")
            .unwrap()
            .value
            .clone();
        let opentelemetry::Value::I64(n) = n else {
            panic!("{n:?}")
        };
        traces.entry(n).or_default().push(span);
    }
    assert_eq!(traces.keys().copied().collect::<Vec<_>>(), [7, 13, 42, 55, 77]);
    for spans in traces.values() {
        let root = spans.iter().find(|s| s.parent_span_id == SpanId::INVALID).unwrap();
        let mut names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
        names.sort();
        assert_eq!(names, ["auth.tail", "query.tail", "render.tail", "request.tail"]);
        assert!(spans
            .iter()
            .all(|s| s.span_context.trace_id() == root.span_context.trace_id()));
    }
}

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
fn shutdown_decides_held_traces_and_exports_the_kept_ones() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::builder(memory.clone())
        .tail_sampling(TailSampling::new().ratio(1.0))
        .build();
    // Children whose root never finishes before shutdown: held, then decided by the ratio.
    for event in &traces(1, 3)[0][..3] {
        exporter.export(event);
    }
    let flushed = exporter.force_flush().unwrap();
    assert_eq!((flushed.exported, flushed.held), (0, 3), "{flushed:?}");
    let stats = exporter.shutdown(Duration::from_secs(30)).unwrap();
    assert_eq!((stats.exported, stats.held, stats.dropped()), (3, 0, 0), "{stats:?}");
    assert_eq!(exporter.tail_stats().unwrap().traces_expired, 1);
}

#[test]
fn the_ratio_decides_as_opentelemetrys_trace_id_ratio_sampler() {
    for ratio in [0.0, 0.1, 0.5, 0.9, 1.0] {
        let config = TailSampling::new().ratio(ratio);
        let sdk = Sampler::TraceIdRatioBased(ratio);
        let mut kept = 0;
        for i in 0..2_000_u128 {
            let id = notify_core::TraceId::new(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1).unwrap();
            let sdk_keeps = sdk
                .should_sample(None, trace_id(id), "x", &SpanKind::Internal, &[], &[])
                .decision
                == SamplingDecision::RecordAndSample;
            assert_eq!(config.ratio_keeps(id), sdk_keeps, "ratio {ratio}, trace {id:?}");
            kept += usize::from(sdk_keeps);
        }
        let expected = ratio * 2_000.0;
        assert!((kept as f64 - expected).abs() <= 100.0, "ratio {ratio}: {kept}");
    }
}
