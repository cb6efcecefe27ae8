//! By default the exporter reports its drops through the notifier's failure hook (issue 35 item
//! 2): once per burst, with the counts by cause and the exporter's last error, counted in
//! `Notifier::failures`; tail sampling's choices are not failures; `on_drops` replaces it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use notify_core::failure::SubscriberFailure;
use notify_core::subscriber::SubscriberKind;
use notify_core::{Notifier, Pattern, Payload};
use notify_opentelemetry::tail::TailSampling;
use notify_opentelemetry::{DropReport, OpenTelemetryExporter};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData, SpanExporter};

fn burst(notifier: &Notifier, n: u64) {
    for i in 0..n {
        notifier.instrument("burst.otel_failure", || Payload::new().with("i", i), |_| ());
    }
}

fn failures(notifier: &Notifier) -> Arc<Mutex<Vec<SubscriberFailure>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
    seen
}

/// Blocks while closed, then keeps what it gets.
#[derive(Debug, Default)]
struct Gate {
    closed: Mutex<bool>,
    opened: Condvar,
    entered: AtomicBool,
}

#[derive(Debug)]
struct Gated(Arc<Gate>);

impl SpanExporter for Gated {
    fn export(&self, _batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.0.entered.store(true, Ordering::SeqCst);
        let mut closed = self.0.closed.lock().unwrap();
        while *closed {
            closed = self.0.opened.wait(closed).unwrap();
        }
        async { Ok(()) }
    }
}

#[test]
fn a_burst_of_queue_full_drops_is_one_failure_through_the_notifiers_hook() {
    let gate = Arc::new(Gate {
        closed: Mutex::new(true),
        ..Gate::default()
    });
    let exporter = OpenTelemetryExporter::builder(Gated(gate.clone()))
        .queue_capacity(50)
        .max_batch_size(50)
        .scheduled_delay(Duration::from_secs(3600))
        .report_interval(Duration::from_secs(3600))
        .build();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let subscription = exporter.subscribe(&notifier, Pattern::all());
    burst(&notifier, 50);
    while !gate.entered.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    burst(&notifier, 950);
    *gate.closed.lock().unwrap() = false;
    gate.opened.notify_all();
    let stats = exporter.force_flush().unwrap();
    assert_eq!((stats.exported, stats.dropped_queue_full), (100, 900), "{stats:?}");

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one burst, one report: {seen:?}");
    assert_eq!(notifier.failures(), 1);
    let failure = &seen[0];
    let drops = failure.export_drops().expect("an export drop report, not a panic");
    assert_eq!(
        (drops.exporter(), drops.causes()),
        ("opentelemetry", &[("queue full", 900)][..])
    );
    assert_eq!(drops.detail_message(), None);
    assert_eq!(
        (failure.subscription(), failure.kind(), failure.event()),
        (subscription.id(), SubscriberKind::Owned, "")
    );
    assert_eq!(
        failure.to_string(),
        format!(
            "exporter `opentelemetry` (owned, subscription {}) dropped 900 events (queue full 900)",
            subscription.id()
        )
    );
}

#[derive(Debug)]
struct Refusing;

impl SpanExporter for Refusing {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Err(OTelSdkError::InternalFailure("collector said 503".into()))
    }
}

#[test]
fn exporter_errors_carry_the_last_error_and_each_failed_flush_is_one_report() {
    let exporter = OpenTelemetryExporter::builder(Refusing).max_batch_size(10).build();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for _ in 0..2 {
        burst(&notifier, 10);
        exporter.force_flush().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for failure in seen.iter() {
        let drops = failure.export_drops().unwrap();
        assert_eq!(drops.causes(), [("exporter error", 10)]);
        assert_eq!(drops.detail_message(), Some("Operation failed: collector said 503"));
    }
    assert_eq!(notifier.failures(), 2);
}

#[test]
fn tail_sampling_drops_are_not_failures() {
    let exporter = OpenTelemetryExporter::builder(InMemorySpanExporter::default())
        .tail_sampling(TailSampling::new())
        .build();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    burst(&notifier, 20);
    let stats = exporter.force_flush().unwrap();
    assert_eq!((stats.dropped_tail_sampling, stats.dropped()), (20, 20), "{stats:?}");
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(notifier.failures(), 0);
}

#[test]
fn on_drops_replaces_the_failure_hook() {
    let reports = Arc::new(Mutex::new(Vec::<DropReport>::new()));
    let sink = reports.clone();
    let exporter = OpenTelemetryExporter::builder(Refusing)
        .on_drops(move |r: &DropReport| sink.lock().unwrap().push(r.clone()))
        .build();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    burst(&notifier, 5);
    exporter.force_flush().unwrap();
    assert_eq!(reports.lock().unwrap().len(), 1);
    assert_eq!(reports.lock().unwrap()[0].burst.dropped_exporter_error, 5);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(notifier.failures(), 0);
}

#[test]
fn when_the_first_notifier_is_gone_the_report_goes_to_the_next_live_one() {
    let exporter = OpenTelemetryExporter::builder(Refusing).build();
    let first = Notifier::new();
    let first_seen = failures(&first);
    let _a = exporter.subscribe(&first, Pattern::all());
    let second = Notifier::new();
    let second_seen = failures(&second);
    let _b = exporter.subscribe(&second, Pattern::all());
    drop(first);
    burst(&second, 3);
    exporter.force_flush().unwrap();
    assert!(first_seen.lock().unwrap().is_empty());
    let seen = second_seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].export_drops().unwrap().causes(), [("exporter error", 3)]);
    assert_eq!(second.failures(), 1);
}
