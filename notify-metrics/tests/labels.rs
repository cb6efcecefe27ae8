//! Which payload keys `MetricsSubscriber` takes as labels: not the labels it sets itself
//! (`event`, `outcome`), not Prometheus' own (`le`, `quantile`), not twice, only Prometheus label
//! names; and the keys it takes label the series as documented.

use std::panic::{catch_unwind, AssertUnwindSafe};

use metrics::Label;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use notify_core::{Notifier, Payload};
use notify_metrics::{LabelError, MetricsSubscriber, BUILTIN_LABELS, PROMETHEUS_RESERVED_LABELS};

/// The panic message of `f`, which must panic with a `String` message.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(other) => panic!("not a String message: {:?}", other.downcast_ref::<&str>()),
    }
}

#[test]
fn the_labels_the_subscriber_sets_itself_are_refused() {
    assert_eq!(BUILTIN_LABELS, ["event", "outcome", "otel_metric_overflow"]);
    for key in ["event", "outcome", "otel_metric_overflow"] {
        let err = MetricsSubscriber::new().try_label(key).unwrap_err();
        assert_eq!(err, LabelError::Builtin { key });
        assert_eq!(err.key(), key);
        assert_eq!(
            err.to_string(),
            format!(
                "label \"{key}\" is set by MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that name cannot be a label"
            )
        );
        // Also after accepted keys (the reviewer's case: .label("event") after others).
        let err = MetricsSubscriber::new().label("table").try_label(key).unwrap_err();
        assert_eq!(err, LabelError::Builtin { key });
    }
}

#[test]
fn the_labels_prometheus_adds_are_refused() {
    assert_eq!(PROMETHEUS_RESERVED_LABELS, ["le", "quantile"]);
    for key in ["le", "quantile"] {
        let err = MetricsSubscriber::new().try_label(key).unwrap_err();
        assert_eq!(err, LabelError::Reserved { key });
        assert_eq!(
            err.to_string(),
            format!(
                "label \"{key}\" is reserved by Prometheus for histogram buckets and summary quantiles (le, quantile)"
            )
        );
    }
}

#[test]
fn a_label_chosen_twice_is_refused() {
    let err = MetricsSubscriber::new()
        .label("table")
        .label("status")
        .try_label("table")
        .unwrap_err();
    assert_eq!(err, LabelError::Duplicate { key: "table" });
    assert_eq!(
        err.to_string(),
        "label \"table\" is already chosen (or another chosen key makes the same label name)"
    );
    // Two keys making one label name: the second is refused.
    let err = MetricsSubscriber::new()
        .label("http.route")
        .try_label("http_route")
        .unwrap_err();
    assert_eq!(err, LabelError::Duplicate { key: "http_route" });
}

/// Issue 47 item 3: `label("http.route")` panicked. Any non-empty key now makes a label name,
/// as OpenTelemetry's Prometheus exporters make one of an attribute key.
#[test]
fn i47_3_keys_that_are_not_prometheus_label_names_are_sanitized_never_refused() {
    let keys = [
        "http.route",
        "a-b",
        "1st",
        "9",
        "with space",
        "tablé",
        "__name__",
        "__x",
        "__",
    ];
    let mut m = MetricsSubscriber::new();
    for key in keys {
        m = m.try_label(key).unwrap_or_else(|e| panic!("{key:?}: {e}"));
    }
    assert_eq!(m.labels(), keys);
    assert_eq!(
        m.label_names(),
        [
            "http_route",
            "a_b",
            "key_1st",
            "key_9",
            "with_space",
            "tabl_",
            "key__name__",
            "key__x",
            "key__"
        ]
    );
    // The panicking form takes them too.
    let m = MetricsSubscriber::new()
        .label("http.route")
        .label("http.response.status_code");
    assert_eq!(m.label_names(), ["http_route", "http_response_status_code"]);
    // A key whose label name is a builtin one is refused as that one.
    let err = MetricsSubscriber::new().try_label("otel.metric.overflow").unwrap_err();
    assert_eq!(
        err,
        LabelError::Builtin {
            key: "otel.metric.overflow"
        }
    );
    // Only the empty key has no label name.
    let err = MetricsSubscriber::new().try_label("").unwrap_err();
    assert_eq!(err, LabelError::InvalidName { key: "" });
    assert_eq!(err.to_string(), "label \"\" is empty: no label name can be made of it");
    // The edges of the rule are accepted.
    let m = MetricsSubscriber::new()
        .try_label("_")
        .and_then(|m| m.try_label("_x"))
        .and_then(|m| m.try_label("a"))
        .and_then(|m| m.try_label("Z9_z"))
        .and_then(|m| m.try_label("x__y"))
        .unwrap();
    assert_eq!(m.labels(), ["_", "_x", "a", "Z9_z", "x__y"]);
    assert_eq!(
        m.label_names(),
        ["_", "_x", "a", "Z9_z", "x__y"],
        "label names stay as they are"
    );
}

#[test]
fn label_panics_with_the_error_it_refuses_with() {
    assert_eq!(
        panic_message(|| drop(MetricsSubscriber::new().label("event").label("outcome"))),
        "notify-metrics: MetricsSubscriber::label: label \"event\" is set by MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that name cannot be a label"
    );
    assert_eq!(
        panic_message(|| drop(MetricsSubscriber::new().label("outcome"))),
        "notify-metrics: MetricsSubscriber::label: label \"outcome\" is set by MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that name cannot be a label"
    );
    assert_eq!(
        panic_message(|| drop(MetricsSubscriber::new().label("le"))),
        "notify-metrics: MetricsSubscriber::label: label \"le\" is reserved by Prometheus for histogram buckets and summary quantiles (le, quantile)"
    );
    assert_eq!(
        panic_message(|| drop(MetricsSubscriber::new().label("table").label("table"))),
        "notify-metrics: MetricsSubscriber::label: label \"table\" is already chosen (or another chosen key makes the same label name)"
    );
    assert_eq!(
        panic_message(|| drop(MetricsSubscriber::new().label(""))),
        "notify-metrics: MetricsSubscriber::label: label \"\" is empty: no label name can be made of it"
    );
}

/// Every series, as (kind, name, [(label, value)], value), sorted.
type Series = (String, String, Vec<(String, String)>, String);

#[test]
fn accepted_labels_keep_every_event_in_its_own_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let notifier = Notifier::new();
    metrics::with_local_recorder(&recorder, || {
        let _s = MetricsSubscriber::new()
            .try_label("table")
            .and_then(|m| m.try_label("status"))
            .unwrap()
            .subscribe(&notifier, notify_core::Pattern::all());
        // Payload keys named like the built-in labels are not labels: they cannot replace the
        // event name or the outcome.
        let payload = || {
            Payload::new()
                .with("table", "books")
                .with("event", "checkout")
                .with("outcome", "ok")
        };
        notifier.instrument("query.sql", payload, |_| ());
        notifier.instrument("order.checkout", || payload().with("status", 201_u16), |_| ());
    });
    let mut series: Vec<Series> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let kind = match key.kind() {
                MetricKind::Counter => "counter",
                MetricKind::Gauge => "gauge",
                MetricKind::Histogram => "histogram",
            };
            let labels = key
                .key()
                .labels()
                .map(|l: &Label| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            let value = match value {
                DebugValue::Counter(n) => n.to_string(),
                DebugValue::Histogram(v) => format!("{} observations", v.len()),
                DebugValue::Gauge(g) => g.to_string(),
            };
            (kind.to_owned(), key.key().name().to_owned(), labels, value)
        })
        .collect();
    series.sort();
    let s = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        series,
        [
            (
                "counter".to_owned(),
                "notify_events_total".to_owned(),
                s(&[
                    ("event", "order.checkout"),
                    ("table", "books"),
                    ("status", "201"),
                    ("outcome", "completed")
                ]),
                "1".to_owned()
            ),
            (
                "counter".to_owned(),
                "notify_events_total".to_owned(),
                s(&[("event", "query.sql"), ("table", "books"), ("outcome", "completed")]),
                "1".to_owned()
            ),
            (
                "histogram".to_owned(),
                "notify_event_duration_seconds".to_owned(),
                s(&[("event", "order.checkout"), ("table", "books"), ("status", "201")]),
                "1 observations".to_owned()
            ),
            (
                "histogram".to_owned(),
                "notify_event_duration_seconds".to_owned(),
                s(&[("event", "query.sql"), ("table", "books")]),
                "1 observations".to_owned()
            ),
        ]
    );
}

#[test]
fn a_prefix_is_sanitized_into_a_metric_name_and_only_an_empty_one_is_refused() {
    let err = MetricsSubscriber::new().try_prefix("").unwrap_err();
    assert_eq!(err.prefix, "");
    assert_eq!(
        err.to_string(),
        "prefix \"\" is empty: the metric names would be \"_events_total\" and \"_event_duration_seconds\""
    );
    for (given, made) in [
        ("my app", "my_app"),
        ("shop.api", "shop_api"),
        ("shop-api", "shop_api"),
        ("1app", "_1app"),
        ("café", "caf_"),
        ("a..b", "a_b"),
    ] {
        let m = MetricsSubscriber::new().try_prefix(given).unwrap();
        assert_eq!(m.events_total_name(), format!("{made}_events_total"), "{given:?}");
    }
    for good in ["app", "_app", "shop:api", "App2"] {
        let m = MetricsSubscriber::new().try_prefix(good).unwrap();
        assert_eq!(m.events_total_name(), format!("{good}_events_total"));
        assert_eq!(m.duration_name(), format!("{good}_event_duration_seconds"));
    }
    let panic = std::panic::catch_unwind(|| MetricsSubscriber::new().prefix("")).unwrap_err();
    assert_eq!(
        panic.downcast_ref::<String>().map(String::as_str),
        Some(
            "notify-metrics: MetricsSubscriber::prefix: prefix \"\" is empty: the metric names would be \"_events_total\" and \"_event_duration_seconds\""
        )
    );
}
