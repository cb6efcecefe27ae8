//! Head sampling: only sampled traces become spans; in-process subscribers still see every event.

use notify_core::{export::Sampler, Event, Notifier, Pattern, Payload};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_sdk::trace::InMemorySpanExporter;

#[test]
fn unsampled_traces_are_not_exported_but_still_delivered() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    let _all = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(move |_: &Event| {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
    );
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let mut sampled_roots = 0;
    notifier.set_sampler(Sampler::ratio(0.5));
    for _ in 0..200 {
        let kept = notifier.instrument("request.http", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| ());
            notify_core::Context::current().is_sampled() == Some(true)
        });
        sampled_roots += usize::from(kept);
    }
    let stats = exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    assert_eq!(stats.exported, spans.len() as u64);
    assert!(sampled_roots > 0 && sampled_roots < 200, "{sampled_roots}");
    assert_eq!(
        spans.len(),
        2 * sampled_roots,
        "each kept trace whole, the others not at all"
    );
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::Relaxed),
        400,
        "subscribers get every event"
    );
}
