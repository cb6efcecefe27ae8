//! [`MetricsSubscriber`]: what it records and how it is configured.

use std::sync::Arc;

use metrics::{Key, KeyName, Label, Level, Metadata, SharedString, Unit};
use notify_core::{Event, EventSubscriber, Notifier, Outcome, Pattern, Subscriber, Subscription, Value, EXCEPTION_KEY};

/// The default name of the event counter (labels `event`, `outcome` and the chosen payload keys).
pub const EVENTS_TOTAL: &str = "notify_events_total";

/// The default name of the duration histogram, in seconds (labels `event` and the chosen payload
/// keys).
pub const EVENT_DURATION_SECONDS: &str = "notify_event_duration_seconds";

/// Histogram bucket bounds in seconds, from 100 µs to 10 s (roughly ×2.5 apart), for exporters
/// that need them (`metrics-exporter-prometheus`'s `set_buckets_for_metric`).
pub const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The label of the event name.
const EVENT_LABEL: &str = "event";
/// The label of the outcome.
const OUTCOME_LABEL: &str = "outcome";

static METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Records every event it receives as `metrics` counters and histograms (see the
/// [crate documentation](crate) for the metrics and their labels).
///
/// Configure it with the builder methods, then [`subscribe`](MetricsSubscriber::subscribe) it or
/// turn it into a [`Subscriber`] (`Subscriber::from(metrics_subscriber)`, an event-object
/// subscriber labelled `"metrics"`). Cloning is cheap (the configuration is shared).
///
/// ```
/// use notify_metrics::MetricsSubscriber;
/// let metrics = MetricsSubscriber::new().prefix("shop").label("table").label("status");
/// assert_eq!(metrics.events_total_name(), "shop_events_total");
/// assert_eq!(metrics.duration_name(), "shop_event_duration_seconds");
/// assert_eq!(metrics.labels(), ["table", "status"]);
/// ```
#[derive(Clone)]
pub struct MetricsSubscriber {
    config: Arc<Config>,
}

#[derive(Clone)]
struct Config {
    events_total: SharedString,
    duration: SharedString,
    labels: Vec<&'static str>,
}

impl Default for MetricsSubscriber {
    fn default() -> MetricsSubscriber {
        MetricsSubscriber::new()
    }
}

impl MetricsSubscriber {
    /// A subscriber recording [`EVENTS_TOTAL`] and [`EVENT_DURATION_SECONDS`], labelled by event
    /// name (and outcome for the counter) only.
    ///
    /// ```
    /// assert!(notify_metrics::MetricsSubscriber::new().labels().is_empty());
    /// ```
    pub fn new() -> MetricsSubscriber {
        MetricsSubscriber {
            config: Arc::new(Config {
                events_total: SharedString::const_str(EVENTS_TOTAL),
                duration: SharedString::const_str(EVENT_DURATION_SECONDS),
                labels: Vec::new(),
            }),
        }
    }

    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Names the metrics `<prefix>_events_total` and `<prefix>_event_duration_seconds`.
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new().prefix("app");
    /// assert_eq!(m.events_total_name(), "app_events_total");
    /// ```
    #[must_use]
    pub fn prefix(mut self, prefix: &str) -> MetricsSubscriber {
        let config = self.config_mut();
        config.events_total = SharedString::from(Arc::<str>::from(format!("{prefix}_events_total")));
        config.duration = SharedString::from(Arc::<str>::from(format!("{prefix}_event_duration_seconds")));
        self
    }

    /// Adds the payload key `key` as a label of both metrics (after `event`, in the order added;
    /// adding a key twice keeps one). Its value is the payload value's text; events without the
    /// key get no such label. Pick keys with few distinct values: each label set is a series.
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new().label("table").label("table");
    /// assert_eq!(m.labels(), ["table"]);
    /// ```
    #[must_use]
    pub fn label(mut self, key: &'static str) -> MetricsSubscriber {
        let config = self.config_mut();
        if !config.labels.contains(&key) {
            config.labels.push(key);
        }
        self
    }

    /// The payload keys used as labels, in order.
    pub fn labels(&self) -> &[&'static str] {
        &self.config.labels
    }

    /// The name of the counter.
    pub fn events_total_name(&self) -> &str {
        &self.config.events_total
    }

    /// The name of the duration histogram.
    pub fn duration_name(&self) -> &str {
        &self.config.duration
    }

    /// Describes both metrics (unit and help text) to the current `metrics` recorder; exporters
    /// show it (Prometheus' `# HELP`). [`MetricsSubscriber::subscribe`] calls it; call it again
    /// after installing a recorder later.
    pub fn describe(&self) {
        let config = &self.config;
        metrics::with_recorder(|recorder| {
            recorder.describe_counter(
                KeyName::from(config.events_total.clone()),
                Some(Unit::Count),
                SharedString::const_str("notify events finished, by event name and outcome"),
            );
            recorder.describe_histogram(
                KeyName::from(config.duration.clone()),
                Some(Unit::Seconds),
                SharedString::const_str("duration of notify events, start to finish"),
            );
        });
    }

    /// Describes the metrics ([`MetricsSubscriber::describe`]) and subscribes this recorder to the
    /// events `pattern` matches on `notifier`.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload};
    /// let notifier = Notifier::new();
    /// let subscription = notify_metrics::MetricsSubscriber::new().subscribe(&notifier, "request.http");
    /// assert!(notifier.listening("request.http"));
    /// subscription.unsubscribe()?;
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn subscribe(self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        self.describe();
        notifier.subscribe(pattern, Subscriber::from(self))
    }

    /// Records `event`: what the subscription calls for each event (public so that other delivery
    /// paths, a worker pool or an importer, can record events they hold).
    pub fn record(&self, event: &Event) {
        let config = &self.config;
        let mut labels = Vec::with_capacity(2 + config.labels.len());
        labels.push(Label::new(EVENT_LABEL, event.name().to_owned()));
        for &key in &config.labels {
            if let Some(value) = event.payload().get(key) {
                labels.push(Label::new(key, label_value(value)));
            }
        }
        let seconds = event.duration().as_secs_f64();
        let outcome = outcome_label(event);
        metrics::with_recorder(|recorder| {
            let histogram = Key::from_parts(config.duration.clone(), labels.clone());
            recorder.register_histogram(&histogram, &METADATA).record(seconds);
            labels.push(Label::new(OUTCOME_LABEL, outcome));
            let counter = Key::from_parts(config.events_total.clone(), labels);
            recorder.register_counter(&counter, &METADATA).increment(1);
        });
    }
}

impl EventSubscriber for MetricsSubscriber {
    fn call(&self, event: &Event) {
        self.record(event);
    }
}

impl From<MetricsSubscriber> for Subscriber {
    /// An event-object subscriber labelled `"metrics"`.
    fn from(metrics: MetricsSubscriber) -> Subscriber {
        Subscriber::event(metrics).named("metrics")
    }
}

impl std::fmt::Debug for MetricsSubscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSubscriber")
            .field("events_total", &self.events_total_name())
            .field("duration", &self.duration_name())
            .field("labels", &self.labels())
            .finish()
    }
}

/// The `outcome` label of `event`.
fn outcome_label(event: &Event) -> &'static str {
    match event.outcome() {
        Outcome::Completed if event.payload().get(EXCEPTION_KEY).is_some() => "error",
        other => other.as_str(),
    }
}

/// The text of a payload value as a label value.
fn label_value(value: &Value) -> SharedString {
    match value {
        Value::Str(text) => match text.as_static() {
            Some(text) => SharedString::const_str(text),
            None => SharedString::from(text.to_string()),
        },
        other => SharedString::from(other.to_string()),
    }
}
