//! A reproduction of a problem found by trying the export path as a new user, not fixed: the fix
//! belongs in notify-core's `Value` (its drop recurses once per nesting level). The test asserts
//! what the docs promise and fails today (it aborts the test process). Run it with
//! `cargo test -p notify-opentelemetry --test open_findings -- --ignored`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use notify_core::{Notifier, Pattern, Payload, Value};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_sdk::trace::InMemorySpanExporter;

/// A payload value nested ~15,000 levels deep (built in-process; decoders refuse more than
/// `Value::MAX_NESTING`) is freed on the exporter thread when its event has been exported, and
/// `Value`'s drop recurses once per level: the thread's 2 MiB stack overflows and the process
/// aborts (debug build; a release build goes deeper first). The instrumenting thread, whose
/// stack was big enough to build and free it, would have survived. (Turning such a value into
/// attribute text no longer overflows: tests/hostile_payloads.rs.)
#[test]
#[ignore = "open: Value's Drop (and Clone) recurse per nesting level; aborts the test process"]
fn a_value_nested_fifty_thousand_deep_is_freed_without_overflowing_the_exporter_thread() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Arc::new(Notifier::new());
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let done = Arc::new(AtomicBool::new(false));
    let (publisher, finished) = (notifier.clone(), done.clone());
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let mut deep = Value::from(1_u64);
            for _ in 0..50_000 {
                deep = Value::List(vec![deep]);
            }
            publisher.instrument("deep.open", || Payload::new().with("deep", deep), |_| ());
            finished.store(true, Ordering::SeqCst);
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(done.load(Ordering::SeqCst));
    let stats = exporter.force_flush().unwrap();
    assert_eq!(stats.exported, 1, "{stats}");
}
