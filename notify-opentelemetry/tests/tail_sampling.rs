//! Tail sampling in front of the OpenTelemetry exporter: exactly the error and slow traces of a
//! synthetic mix are exported, whole, and every other event is counted; a shutdown decides what is
//! held; the ratio decides as OpenTelemetry's TraceIdRatioBased does. The stage's own bounds are
//! tested in notify-core/tests/tail_sampling.rs.

use std::collections::BTreeMap;
use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_opentelemetry::tail::TailSampling;
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

#[test]
fn shutdown_decides_held_traces_and_exports_the_kept_ones() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::builder(memory.clone())
        .tail_sampling(TailSampling::new().ratio(1.0))
        .build();
    // Children whose root never finishes before shutdown: held, then decided by the ratio.
    let notifier = Notifier::new();
    let _s = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(|_: &notify_core::Event| {}),
    );
    let now = std::time::Instant::now();
    notifier.instrument("root.tail", Payload::new, |_| {
        for _ in 0..3 {
            exporter.export(&std::sync::Arc::new(notify_core::Event::new(
                "child.tail",
                now,
                now,
                Payload::new(),
            )));
        }
    });
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
