//! What `MetricsSubscriber` records, read back from metrics-util's debugging recorder (installed
//! as the thread's local recorder: delivery happens on the instrumenting thread).

use std::time::Duration;

use metrics::{Label, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use notify_core::{event::Outcome, Handle, Notifier, Payload};
use notify_metrics::MetricsSubscriber;

type Entry = (CompositeKey, Option<Unit>, Option<SharedString>, DebugValue);

fn labels(key: &CompositeKey) -> Vec<(String, String)> {
    key.key()
        .labels()
        .map(|l: &Label| (l.key().to_owned(), l.value().to_owned()))
        .collect()
}

fn find<'a>(entries: &'a [Entry], kind: MetricKind, name: &str, want: &[(&str, &str)]) -> Option<&'a Entry> {
    let want: Vec<(String, String)> = want.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    entries
        .iter()
        .find(|(key, ..)| key.kind() == kind && key.key().name() == name && labels(key) == want)
}

fn counter(entries: &[Entry], name: &str, want: &[(&str, &str)]) -> u64 {
    match find(entries, MetricKind::Counter, name, want) {
        Some((.., DebugValue::Counter(n))) => *n,
        other => panic!("no counter {name} {want:?}: {other:?}\n{entries:#?}"),
    }
}

fn histogram(entries: &[Entry], name: &str, want: &[(&str, &str)]) -> Vec<f64> {
    match find(entries, MetricKind::Histogram, name, want) {
        Some((.., DebugValue::Histogram(values))) => values.iter().map(|v| v.into_inner()).collect(),
        other => panic!("no histogram {name} {want:?}: {other:?}\n{entries:#?}"),
    }
}

fn recorded(f: impl FnOnce(&Notifier)) -> Vec<Entry> {
    let recorder = DebuggingRecorder::new();
    let snapshotter: Snapshotter = recorder.snapshotter();
    let notifier = Notifier::new();
    metrics::with_local_recorder(&recorder, || f(&notifier));
    snapshotter.snapshot().into_vec()
}

#[test]
fn counts_and_durations_per_event_name_and_chosen_payload_keys() {
    let entries = recorded(|notifier| {
        let _s = MetricsSubscriber::new().label("table").subscribe(notifier, "query.sql");
        for table in ["books", "books", "orders"] {
            notifier.instrument(
                "query.sql",
                || Payload::new().with("table", table).with("sql", "SELECT"),
                |_| {
                    std::thread::sleep(Duration::from_millis(2));
                },
            );
        }
        // Without the label key: no `table` label.
        notifier.instrument("query.sql", Payload::new, |_| ());
    });
    let books = [("event", "query.sql"), ("table", "books")];
    assert_eq!(
        counter(
            &entries,
            "notify_events_total",
            &[books[0], books[1], ("outcome", "completed")]
        ),
        2
    );
    assert_eq!(
        counter(
            &entries,
            "notify_events_total",
            &[("event", "query.sql"), ("table", "orders"), ("outcome", "completed")]
        ),
        1
    );
    assert_eq!(
        counter(
            &entries,
            "notify_events_total",
            &[("event", "query.sql"), ("outcome", "completed")]
        ),
        1
    );
    let seconds = histogram(&entries, "notify_event_duration_seconds", &books);
    assert_eq!(seconds.len(), 2);
    assert!(seconds.iter().all(|&s| (0.002..1.0).contains(&s)), "{seconds:?}");
    // The SQL text is not a label: 4 series in all (3 counters, 3 histograms).
    assert_eq!(entries.len(), 6, "{entries:#?}");
    // The units and help texts were described.
    let (_, unit, help, _) = find(&entries, MetricKind::Histogram, "notify_event_duration_seconds", &books).unwrap();
    assert_eq!(*unit, Some(Unit::Seconds));
    assert!(help.as_deref().unwrap().contains("duration"));
}

#[test]
fn outcomes_completed_error_panicked_cancelled() {
    let entries = recorded(|notifier| {
        let _s = MetricsSubscriber::new().subscribe(notifier, notify_core::Pattern::all());
        notifier.instrument("a.job", Payload::new, |_| ());
        let _ = notifier.instrument_result("a.job", Payload::new, |_| "x".parse::<u8>());
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            notifier.instrument("a.job", Payload::new, |_| panic!("boom"));
        }));
        let mut handle: Handle = notifier.build_handle("a.job", Payload::new());
        handle.start().unwrap();
        handle.set_outcome(Outcome::Cancelled);
        handle.finish().unwrap();
    });
    for outcome in ["completed", "error", "panicked", "cancelled"] {
        assert_eq!(
            counter(
                &entries,
                "notify_events_total",
                &[("event", "a.job"), ("outcome", outcome)]
            ),
            1,
            "{outcome}"
        );
    }
    assert_eq!(
        histogram(&entries, "notify_event_duration_seconds", &[("event", "a.job")]).len(),
        4
    );
}

#[test]
fn prefix_renames_both_metrics_and_label_values_are_the_values_text() {
    let entries = recorded(|notifier| {
        let _s = MetricsSubscriber::new()
            .prefix("shop")
            .label("status")
            .label("cached")
            .subscribe(notifier, "request.http");
        notifier.instrument(
            "request.http",
            || Payload::new().with("status", 404_u16).with("cached", false),
            |_| (),
        );
    });
    let want = [("event", "request.http"), ("status", "404"), ("cached", "false")];
    assert_eq!(
        counter(
            &entries,
            "shop_events_total",
            &[want[0], want[1], want[2], ("outcome", "completed")]
        ),
        1
    );
    assert_eq!(histogram(&entries, "shop_event_duration_seconds", &want).len(), 1);
    assert!(find(&entries, MetricKind::Counter, "notify_events_total", &[]).is_none());
}
