//! The per-metric series limit (issue 33 item 14): 20,000 distinct values of one label made
//! 20,000 series and a 33 MB scrape. Read back from metrics-util's debugging recorder.

use metrics::Label;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use notify_core::{Notifier, Payload};
use notify_metrics::{Cardinality, MetricsSubscriber, DEFAULT_CARDINALITY_LIMIT, OVERFLOW_LABEL};

/// The fields of `c`, in order: series of the counter and the histogram, overflowed recordings
/// of each.
fn parts(c: Cardinality) -> (usize, usize, u64, u64) {
    (
        c.events_total_series,
        c.duration_series,
        c.events_total_overflowed,
        c.duration_overflowed,
    )
}

const OVERFLOW: &[(&str, &str)] = &[("otel_metric_overflow", "true")];

/// Per metric name: (series that are not the overflow one, counter total or observation count of
/// those, the overflow series' total or count if it exists).
struct Recorded {
    counter_series: usize,
    counter_total: u64,
    counter_overflow: Option<u64>,
    histogram_series: usize,
    histogram_count: usize,
    histogram_overflow: Option<usize>,
}

fn record(subscriber: MetricsSubscriber, events: usize) -> (Recorded, Cardinality) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let notifier = Notifier::new();
    let subscriber_handle = subscriber.clone();
    metrics::with_local_recorder(&recorder, || {
        let _s = subscriber.subscribe(&notifier, "query.sql");
        for user in 0..events {
            notifier.instrument("query.sql", || Payload::new().with("user", user as u64), |_| ());
        }
    });
    let mut recorded = Recorded {
        counter_series: 0,
        counter_total: 0,
        counter_overflow: None,
        histogram_series: 0,
        histogram_count: 0,
        histogram_overflow: None,
    };
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let labels: Vec<(&str, &str)> = key.key().labels().map(|l: &Label| (l.key(), l.value())).collect();
        let overflow = labels == OVERFLOW;
        assert!(
            overflow || !labels.iter().any(|(k, _)| *k == OVERFLOW_LABEL),
            "the overflow label is alone: {labels:?}"
        );
        match (key.kind(), value) {
            (MetricKind::Counter, DebugValue::Counter(n)) if overflow => {
                assert!(recorded.counter_overflow.replace(n).is_none())
            }
            (MetricKind::Counter, DebugValue::Counter(n)) => {
                recorded.counter_series += 1;
                recorded.counter_total += n;
            }
            (MetricKind::Histogram, DebugValue::Histogram(v)) if overflow => {
                assert!(recorded.histogram_overflow.replace(v.len()).is_none())
            }
            (MetricKind::Histogram, DebugValue::Histogram(v)) => {
                recorded.histogram_series += 1;
                recorded.histogram_count += v.len();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    (recorded, subscriber_handle.cardinality())
}

#[test]
fn twenty_thousand_label_values_make_the_limit_plus_one_overflow_series() {
    assert_eq!(DEFAULT_CARDINALITY_LIMIT, 2_000);
    let (r, stats) = record(MetricsSubscriber::new().label("user"), 20_000);
    assert_eq!(
        (r.counter_series, r.counter_total, r.counter_overflow),
        (2_000, 2_000, Some(18_000))
    );
    assert_eq!(
        (r.histogram_series, r.histogram_count, r.histogram_overflow),
        (2_000, 2_000, Some(18_000))
    );
    assert_eq!(parts(stats), (2_000, 2_000, 18_000, 18_000));
}

#[test]
fn series_recorded_before_the_limit_keep_their_own_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let notifier = Notifier::new();
    let subscriber = MetricsSubscriber::new().label("table").cardinality_limit(2);
    let stats = subscriber.clone();
    metrics::with_local_recorder(&recorder, || {
        let _s = subscriber.subscribe(&notifier, "query.sql");
        for table in ["books", "orders", "users", "books", "orders", "users", "carts"] {
            notifier.instrument("query.sql", || Payload::new().with("table", table), |_| ());
        }
    });
    let mut counters: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.kind() == MetricKind::Counter)
        .map(|(key, _, _, value)| {
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let DebugValue::Counter(n) = value else {
                panic!("{value:?}")
            };
            (labels.join(","), n)
        })
        .collect();
    counters.sort();
    assert_eq!(
        counters,
        [
            ("event=query.sql,table=books,outcome=completed".to_owned(), 2),
            ("event=query.sql,table=orders,outcome=completed".to_owned(), 2),
            ("otel_metric_overflow=true".to_owned(), 3),
        ]
    );
    assert_eq!(parts(stats.cardinality()), (2, 2, 3, 3));
}

#[test]
fn a_limit_of_zero_sends_everything_to_overflow_and_max_turns_it_off() {
    let (r, stats) = record(MetricsSubscriber::new().label("user").cardinality_limit(0), 10);
    assert_eq!((r.counter_series, r.counter_overflow), (0, Some(10)));
    assert_eq!((r.histogram_series, r.histogram_overflow), (0, Some(10)));
    assert_eq!((stats.events_total_overflowed, stats.duration_overflowed), (10, 10));

    let (r, stats) = record(
        MetricsSubscriber::new().label("user").cardinality_limit(usize::MAX),
        3_000,
    );
    assert_eq!(
        (r.counter_series, r.counter_total, r.counter_overflow),
        (3_000, 3_000, None)
    );
    assert_eq!((r.histogram_series, r.histogram_overflow), (3_000, None));
    assert_eq!(stats, Cardinality::default(), "nothing is tracked without a limit");
}

/// A clone shares the count (it records the same metrics); a changed configuration starts anew.
#[test]
fn clones_share_the_series_and_a_new_configuration_starts_anew() {
    let recorder = DebuggingRecorder::new();
    let notifier = Notifier::new();
    let a = MetricsSubscriber::new().label("user").cardinality_limit(5);
    let b = a.clone();
    metrics::with_local_recorder(&recorder, || {
        let _s1 = a.clone().subscribe(&notifier, "one.sql");
        let _s2 = b.clone().subscribe(&notifier, "two.sql");
        for user in 0..4_u64 {
            notifier.instrument("one.sql", || Payload::new().with("user", user), |_| ());
            notifier.instrument("two.sql", || Payload::new().with("user", user), |_| ());
        }
    });
    assert_eq!(a.cardinality(), b.cardinality());
    assert_eq!(
        (
            a.cardinality().events_total_series,
            a.cardinality().events_total_overflowed
        ),
        (5, 3)
    );
    assert_eq!(a.cardinality_limit(7).cardinality(), Cardinality::default());
}
