//! Issue 44 item 8, found by trying the export path as a new user: a payload value nested far
//! deeper than decoders accept, built in the process, is exported and freed on the exporter's
//! thread. `Value`'s `Drop` (and `Clone`, `PartialEq`, `Debug`) no longer recurse per nesting
//! level, so this passes; it aborted the test process on 5b4eaac.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use notify_core::{Notifier, Pattern, Payload, Value};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_sdk::trace::InMemorySpanExporter;

/// A payload value nested 50,000 levels deep (built in-process; decoders refuse more than
/// `Value::MAX_NESTING`) is freed on the exporter thread when its event has been exported. With
/// `Value`'s drop recursing once per level (5b4eaac), the exporter thread's 2 MiB stack overflowed
/// at ~15,000 levels and the process aborted. (Turning such a value into attribute text does not
/// overflow either: tests/hostile_payloads.rs.)
#[test]
fn i44_8_a_value_nested_fifty_thousand_deep_is_freed_without_overflowing_the_exporter_thread() {
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
