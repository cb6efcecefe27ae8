//! [`MetricsSubscriber`]: what it records and how it is configured.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use metrics::{Key, KeyName, Label, Level, Metadata, SharedString, Unit};
use notify_core::{
    event::Outcome, payload::EXCEPTION_KEY, Event, EventSubscriber, Notifier, Pattern, Subscriber, Subscription, Value,
};

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

/// The only label of a metric's overflow series (value `"true"`): the series that takes what
/// events record once the metric has [`MetricsSubscriber::cardinality_limit`] series.
/// OpenTelemetry's SDKs call that attribute `otel.metric.overflow`; a Prometheus label name
/// cannot hold a dot, and OpenTelemetry's Prometheus exporters write the same attribute as
/// `otel_metric_overflow` (dots become underscores), so a dashboard or alert written for one
/// works for the other.
pub const OVERFLOW_LABEL: &str = "otel_metric_overflow";

/// The default [`MetricsSubscriber::cardinality_limit`]: 2,000 series per metric, as
/// OpenTelemetry's SDKs default to.
pub const DEFAULT_CARDINALITY_LIMIT: usize = 2_000;

/// The labels [`MetricsSubscriber::record`] sets itself: a payload key of one of these names as a
/// label would replace the event name or the outcome (or give the histogram an `outcome`), or
/// pass a series for the overflow series ([`OVERFLOW_LABEL`]).
pub const BUILTIN_LABELS: &[&str] = &[EVENT_LABEL, OUTCOME_LABEL, OVERFLOW_LABEL];

/// The labels Prometheus' exposition format adds itself: `le` to each bucket of a histogram,
/// `quantile` to each quantile of a summary (what `metrics-exporter-prometheus` renders a histogram
/// as when it has no buckets). A payload label of that name would be mixed up with them.
pub const PROMETHEUS_RESERVED_LABELS: &[&str] = &["le", "quantile"];

/// Why [`MetricsSubscriber::try_label`] refused a payload key as a label (and
/// [`MetricsSubscriber::label`] panicked). Each variant holds the refused key.
///
/// ```
/// use notify_metrics::{LabelError, MetricsSubscriber};
/// let err = MetricsSubscriber::new().try_label("event").unwrap_err();
/// assert_eq!(err, LabelError::Builtin { key: "event" });
/// assert_eq!(err.key(), "event");
/// assert_eq!(
///     err.to_string(),
///     "label \"event\" is set by MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that name cannot be a label"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LabelError {
    /// The key is one of [`BUILTIN_LABELS`] (`event`, `outcome`, `otel_metric_overflow`), which
    /// the subscriber sets itself.
    Builtin {
        /// The refused key.
        key: &'static str,
    },
    /// The key is one of [`PROMETHEUS_RESERVED_LABELS`] (`le`, `quantile`), which Prometheus'
    /// exposition format adds to histogram buckets and summary quantiles.
    Reserved {
        /// The refused key.
        key: &'static str,
    },
    /// The key was already chosen as a label of this subscriber, or another chosen key makes the
    /// same label name (`http.route` and `http_route` both make `http_route`).
    Duplicate {
        /// The refused key.
        key: &'static str,
    },
    /// The key is empty: no label name can be made of it. (Any other key has one:
    /// [`prometheus_label_name`](crate::prometheus_label_name).)
    InvalidName {
        /// The refused key.
        key: &'static str,
    },
}

impl LabelError {
    /// The payload key that was refused.
    pub fn key(&self) -> &'static str {
        match *self {
            LabelError::Builtin { key }
            | LabelError::Reserved { key }
            | LabelError::Duplicate { key }
            | LabelError::InvalidName { key } => key,
        }
    }
}

impl std::fmt::Display for LabelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelError::Builtin { key } => write!(
                f,
                "label {key:?} is set by MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that name cannot be a label"
            ),
            LabelError::Reserved { key } => write!(
                f,
                "label {key:?} is reserved by Prometheus for histogram buckets and summary quantiles (le, quantile)"
            ),
            LabelError::Duplicate { key } => write!(
                f,
                "label {key:?} is already chosen (or another chosen key makes the same label name)"
            ),
            LabelError::InvalidName { key } => write!(f, "label {key:?} is empty: no label name can be made of it"),
        }
    }
}

impl std::error::Error for LabelError {}

/// A prefix [`MetricsSubscriber::try_prefix`] refused: an empty one (any other is sanitized into
/// a Prometheus metric name).
///
/// ```
/// let err = notify_metrics::MetricsSubscriber::new().try_prefix("").unwrap_err();
/// assert_eq!(err.to_string(), "prefix \"\" is empty: the metric names would be \"_events_total\" and \"_event_duration_seconds\"");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixError {
    /// The prefix as given.
    pub prefix: String,
}

impl std::fmt::Display for PrefixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "prefix {:?} is empty: the metric names would be \"_events_total\" and \"_event_duration_seconds\"",
            self.prefix
        )
    }
}

impl std::error::Error for PrefixError {}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`: Prometheus' metric name rule.
fn is_prometheus_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':');
    first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

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
    /// The series recorded so far, shared by the clones (made anew by the builder methods that
    /// change what a series is: the prefix, the labels, the limit).
    series: Arc<Series>,
}

#[derive(Clone)]
struct Config {
    events_total: SharedString,
    duration: SharedString,
    /// The payload keys chosen as labels.
    labels: Vec<&'static str>,
    /// Their label names, in the same order ([`prometheus_label_name`]).
    label_names: Vec<SharedString>,
    cardinality_limit: usize,
}

/// The series of both metrics recorded so far.
struct Series {
    events_total: Limited,
    duration: Limited,
}

impl Series {
    fn new(config: &Config) -> Arc<Series> {
        Arc::new(Series {
            events_total: Limited::new(&config.events_total, config.cardinality_limit),
            duration: Limited::new(&config.duration, config.cardinality_limit),
        })
    }
}

/// A hasher for [`Key`]s: a `Key` hashes itself once, when it is made, and feeds the set only that
/// `u64` (`write_u64`, as `metrics` documents), so the set takes it as it is rather than hash it
/// again with SipHash (`write`, never called by `Key`, folds bytes FNV-1a style to stay correct).
#[derive(Default)]
struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// The series of one metric: at most `limit` label sets, then the overflow series.
struct Limited {
    limit: usize,
    seen: RwLock<HashSet<Key, BuildHasherDefault<KeyHash>>>,
    overflow: Key,
    overflowed: AtomicU64,
}

impl Limited {
    fn new(name: &SharedString, limit: usize) -> Limited {
        Limited {
            limit,
            seen: RwLock::new(HashSet::default()),
            overflow: Key::from_parts(name.clone(), vec![Label::from_static_parts(OVERFLOW_LABEL, "true")]),
            overflowed: AtomicU64::new(0),
        }
    }

    /// `key` when it is a series already recorded or one more fits, else the overflow series
    /// (counted). A read lock for a known series; the write lock only for a new one.
    fn admit<'a>(&'a self, key: &'a Key) -> &'a Key {
        if self.limit == usize::MAX {
            return key;
        }
        // A panic elsewhere while the lock was held cannot leave the set half-changed (an insert
        // is one call): a poisoned lock is used as it is.
        if self.seen.read().unwrap_or_else(|e| e.into_inner()).contains(key) {
            return key;
        }
        let mut seen = self.seen.write().unwrap_or_else(|e| e.into_inner());
        if seen.contains(key) || (seen.len() < self.limit && seen.insert(key.clone())) {
            return key;
        }
        drop(seen);
        self.overflowed.fetch_add(1, Ordering::Relaxed);
        &self.overflow
    }

    fn len(&self) -> usize {
        self.seen.read().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// What [`MetricsSubscriber::cardinality`] reports: the series each metric has and how many
/// recordings went to its overflow series (`otel_metric_overflow="true"`) because it had
/// [`MetricsSubscriber::cardinality_limit`] series already. Counted since the subscriber was
/// configured, over all its clones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cardinality {
    /// Distinct label sets of the counter (the overflow series not included; 0 when the limit is
    /// off: nothing is tracked then).
    pub events_total_series: usize,
    /// Distinct label sets of the histogram (the overflow series not included; 0 when the limit
    /// is off).
    pub duration_series: usize,
    /// Counter increments refused a series of their own and added to the overflow series.
    pub events_total_overflowed: u64,
    /// Histogram observations refused a series of their own and recorded in the overflow series.
    pub duration_overflowed: u64,
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
        let config = Config {
            events_total: SharedString::const_str(EVENTS_TOTAL),
            duration: SharedString::const_str(EVENT_DURATION_SECONDS),
            labels: Vec::new(),
            label_names: Vec::new(),
            cardinality_limit: DEFAULT_CARDINALITY_LIMIT,
        };
        MetricsSubscriber {
            series: Series::new(&config),
            config: Arc::new(config),
        }
    }

    /// The configuration, to change it; the builder method then calls
    /// [`configured`](MetricsSubscriber::configured).
    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Starts the series tracking anew after a configuration change: what a series is (its
    /// names, its labels, the limit) changed, so the series recorded are forgotten (the builder
    /// methods are meant to be called before any event is recorded).
    fn configured(mut self) -> MetricsSubscriber {
        self.series = Series::new(&self.config);
        self
    }

    /// At most `limit` series per metric (default [`DEFAULT_CARDINALITY_LIMIT`], 2,000, as
    /// OpenTelemetry's SDKs): once a metric has `limit` distinct label sets, an event whose label
    /// set is new is recorded in that metric's overflow series instead, whose only label is
    /// `otel_metric_overflow="true"` ([`OVERFLOW_LABEL`]), and counted
    /// ([`MetricsSubscriber::cardinality`]). Series already recorded keep being recorded. So
    /// `limit` + 1 series per metric at most, whatever the payload values: a label with an
    /// unexpected spread of values (a user id where a table name was meant) costs a bounded
    /// scrape and bounded memory in the recorder, and shows as a non-zero overflow series.
    ///
    /// The counter has an `outcome` label the histogram has not, so it may reach its limit first.
    /// The series are tracked by this subscriber and its clones (a set of the label sets, about
    /// 100 bytes a series): two separately built subscribers writing the same metric names each
    /// allow `limit`. `usize::MAX` turns the limit off (nothing is tracked, no cost); 0 sends
    /// every event to the overflow series.
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new().cardinality_limit(100);
    /// assert_eq!(m.cardinality_limit_value(), 100);
    /// assert_eq!(notify_metrics::MetricsSubscriber::new().cardinality_limit_value(), 2_000);
    /// ```
    #[must_use]
    pub fn cardinality_limit(mut self, limit: usize) -> MetricsSubscriber {
        self.config_mut().cardinality_limit = limit;
        self.configured()
    }

    /// The series limit per metric ([`MetricsSubscriber::cardinality_limit`]).
    pub fn cardinality_limit_value(&self) -> usize {
        self.config.cardinality_limit
    }

    /// The series each metric has and what went to the overflow series ([`Cardinality`]).
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new();
    /// assert_eq!(m.cardinality(), notify_metrics::Cardinality::default());
    /// ```
    pub fn cardinality(&self) -> Cardinality {
        let series = &self.series;
        let tracked = self.config.cardinality_limit != usize::MAX;
        Cardinality {
            events_total_series: if tracked { series.events_total.len() } else { 0 },
            duration_series: if tracked { series.duration.len() } else { 0 },
            events_total_overflowed: series.events_total.overflowed.load(Ordering::Relaxed),
            duration_overflowed: series.duration.overflowed.load(Ordering::Relaxed),
        }
    }

    /// Names the metrics `<prefix>_events_total` and `<prefix>_event_duration_seconds`. A
    /// character a Prometheus metric name cannot hold becomes `_` (runs of `_` one), and a
    /// leading digit gets `_` in front, as OpenTelemetry's Prometheus exporters write metric
    /// names ([`prometheus_metric_name`](crate::prometheus_metric_name)): `"shop.api"` names
    /// `shop_api_events_total`. [`try_prefix`](MetricsSubscriber::try_prefix) is the same without
    /// the panic.
    ///
    /// # Panics
    /// When `prefix` is empty, with the message `notify-metrics: MetricsSubscriber::prefix: ` and
    /// the [`PrefixError`]: a mistake in the configuration is found when the subscriber is built.
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new().prefix("app");
    /// assert_eq!(m.events_total_name(), "app_events_total");
    /// let m = notify_metrics::MetricsSubscriber::new().prefix("shop.api");
    /// assert_eq!(m.duration_name(), "shop_api_event_duration_seconds");
    /// ```
    #[must_use]
    #[track_caller]
    pub fn prefix(self, prefix: &str) -> MetricsSubscriber {
        match self.try_prefix(prefix) {
            Ok(subscriber) => subscriber,
            Err(e) => panic!("notify-metrics: MetricsSubscriber::prefix: {e}"),
        }
    }

    /// Names the metrics `<prefix>_events_total` and `<prefix>_event_duration_seconds`, as
    /// [`prefix`](MetricsSubscriber::prefix) does, or says why it cannot.
    ///
    /// # Errors
    /// [`PrefixError`] when `prefix` is empty. The subscriber is consumed either way.
    ///
    /// ```
    /// use notify_metrics::MetricsSubscriber;
    /// assert_eq!(MetricsSubscriber::new().try_prefix("shop:api")?.duration_name(), "shop:api_event_duration_seconds");
    /// assert_eq!(MetricsSubscriber::new().try_prefix("my app")?.duration_name(), "my_app_event_duration_seconds");
    /// assert!(MetricsSubscriber::new().try_prefix("").is_err());
    /// # Ok::<(), notify_metrics::PrefixError>(())
    /// ```
    pub fn try_prefix(mut self, prefix: &str) -> Result<MetricsSubscriber, PrefixError> {
        let Some(prefix) = crate::names::prometheus_metric_name(prefix, "") else {
            return Err(PrefixError {
                prefix: prefix.to_owned(),
            });
        };
        debug_assert!(is_prometheus_metric_name(&prefix), "{prefix}");
        let config = self.config_mut();
        config.events_total = SharedString::from(Arc::<str>::from(format!("{prefix}_events_total")));
        config.duration = SharedString::from(Arc::<str>::from(format!("{prefix}_event_duration_seconds")));
        Ok(self.configured())
    }

    /// Adds the payload key `key` as a label of both metrics (after `event`, in the order added).
    /// Its value is the payload value's text; events without the key get no such label. Pick keys
    /// with few distinct values: each label set is a series.
    ///
    /// The label's name is the key as OpenTelemetry's Prometheus exporters write an attribute key
    /// ([`prometheus_label_name`](crate::prometheus_label_name)): a character a label name
    /// cannot hold becomes `_`, so `label("http.route")` records notify-http's route as
    /// `http_route`.
    ///
    /// Use it with keys written in the code; [`try_label`](MetricsSubscriber::try_label) is the
    /// same without the panic, for keys chosen at run time. A refused key is a mistake in the
    /// configuration, found when the subscriber is built, before any event is recorded; checking
    /// here, rather than in [`subscribe`](MetricsSubscriber::subscribe), means every
    /// `MetricsSubscriber` (also one delivered to through `From<MetricsSubscriber> for Subscriber`
    /// or a worker pool) has valid labels, and the builder keeps chaining, as the workspace's
    /// `WorkerPool::builder().build()` panics where `try_build` returns the error.
    ///
    /// # Panics
    /// When [`try_label`](MetricsSubscriber::try_label) refuses `key`, with the message
    /// `notify-metrics: MetricsSubscriber::label: ` and the [`LabelError`]: its label name is
    /// `event`, `outcome` or `otel_metric_overflow` (labels the subscriber sets itself), `le` or
    /// `quantile` (labels Prometheus adds) or already chosen, or `key` is empty.
    ///
    /// ```
    /// let m = notify_metrics::MetricsSubscriber::new().label("table").label("http.route");
    /// assert_eq!(m.labels(), ["table", "http.route"]);
    /// assert_eq!(m.label_names(), ["table", "http_route"]);
    /// ```
    ///
    /// ```should_panic
    /// // Panics: notify-metrics: MetricsSubscriber::label: label "outcome" is set by
    /// // MetricsSubscriber itself (event, outcome, otel_metric_overflow); a payload key of that
    /// // name cannot be a label
    /// let _ = notify_metrics::MetricsSubscriber::new().label("outcome");
    /// ```
    #[must_use]
    #[track_caller]
    pub fn label(self, key: &'static str) -> MetricsSubscriber {
        match self.try_label(key) {
            Ok(subscriber) => subscriber,
            Err(e) => panic!("notify-metrics: MetricsSubscriber::label: {e}"),
        }
    }

    /// Adds the payload key `key` as a label of both metrics, as [`label`](MetricsSubscriber::label)
    /// does, or says why it cannot be one.
    ///
    /// # Errors
    /// Checked on the label name the key makes ([`prometheus_label_name`](crate::prometheus_label_name)):
    /// * [`LabelError::Builtin`]: it is `event`, `outcome` or `otel_metric_overflow`
    ///   ([`BUILTIN_LABELS`]; so is the key `otel.metric.overflow`), which the subscriber sets
    ///   itself; as a payload label it would replace the event name (merging the series of
    ///   different events) or the outcome, or make a series pass for the overflow series.
    /// * [`LabelError::Reserved`]: it is `le` or `quantile` ([`PROMETHEUS_RESERVED_LABELS`]).
    /// * [`LabelError::Duplicate`]: `key`, or a key making the same name, was already chosen.
    /// * [`LabelError::InvalidName`]: `key` is empty.
    ///
    /// The subscriber is consumed either way (it is cheap to clone).
    ///
    /// ```
    /// use notify_metrics::{LabelError, MetricsSubscriber};
    /// let m = MetricsSubscriber::new().try_label("table")?;
    /// assert_eq!(m.labels(), ["table"]);
    /// assert_eq!(m.clone().try_label("table").unwrap_err(), LabelError::Duplicate { key: "table" });
    /// let m = m.try_label("http.status")?;
    /// assert_eq!(m.label_names(), ["table", "http_status"]);
    /// assert_eq!(m.clone().try_label("http_status").unwrap_err(), LabelError::Duplicate { key: "http_status" });
    /// assert_eq!(m.try_label("").unwrap_err(), LabelError::InvalidName { key: "" });
    /// # Ok::<(), LabelError>(())
    /// ```
    pub fn try_label(mut self, key: &'static str) -> Result<MetricsSubscriber, LabelError> {
        let Some(name) = crate::names::prometheus_label_name(key) else {
            return Err(LabelError::InvalidName { key });
        };
        if BUILTIN_LABELS.contains(&name.as_str()) {
            return Err(LabelError::Builtin { key });
        }
        if PROMETHEUS_RESERVED_LABELS.contains(&name.as_str()) {
            return Err(LabelError::Reserved { key });
        }
        if self.config.label_names.iter().any(|chosen| **chosen == *name) {
            return Err(LabelError::Duplicate { key });
        }
        // The key itself when it is already a label name: a static name, no copy per event.
        let name = if name == key {
            SharedString::const_str(key)
        } else {
            SharedString::from(Arc::<str>::from(name))
        };
        let config = self.config_mut();
        config.labels.push(key);
        config.label_names.push(name);
        Ok(self.configured())
    }

    /// The payload keys used as labels, in order.
    pub fn labels(&self) -> &[&'static str] {
        &self.config.labels
    }

    /// The label names of [`labels`](MetricsSubscriber::labels), in the same order: each key as
    /// [`prometheus_label_name`](crate::prometheus_label_name) writes it (`http.route` ->
    /// `http_route`).
    pub fn label_names(&self) -> Vec<&str> {
        self.config.label_names.iter().map(|name| &**name).collect()
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
    /// paths, a worker pool or an importer, can record events they hold). A series beyond the
    /// [`cardinality_limit`](MetricsSubscriber::cardinality_limit) goes to the overflow series.
    pub fn record(&self, event: &Event) {
        let config = &self.config;
        let mut labels = Vec::with_capacity(2 + config.labels.len());
        labels.push(Label::new(EVENT_LABEL, event.name().to_owned()));
        for (&key, name) in config.labels.iter().zip(&config.label_names) {
            if let Some(value) = event.payload().get(key) {
                labels.push(Label::new(name.clone(), label_value(value)));
            }
        }
        let seconds = event.duration().as_secs_f64();
        let outcome = outcome_label(event);
        let series = &self.series;
        metrics::with_recorder(|recorder| {
            let histogram = Key::from_parts(config.duration.clone(), labels.clone());
            recorder
                .register_histogram(series.duration.admit(&histogram), &METADATA)
                .record(seconds);
            labels.push(Label::new(OUTCOME_LABEL, outcome));
            let counter = Key::from_parts(config.events_total.clone(), labels);
            recorder
                .register_counter(series.events_total.admit(&counter), &METADATA)
                .increment(1);
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
            .field("cardinality_limit", &self.config.cardinality_limit)
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

#[cfg(test)]
mod tests {
    use std::hash::Hash;

    use super::*;

    /// The series set relies on `Key` feeding its hasher its own precomputed hash alone.
    #[test]
    fn a_key_hashes_to_its_own_precomputed_hash() {
        let key = Key::from_parts("notify_events_total", vec![Label::new("event", "query.sql")]);
        let mut hasher = KeyHash::default();
        key.hash(&mut hasher);
        assert_eq!(hasher.finish(), key.get_hash());
        // Bytes (never written by a Key) still hash, and differently for different bytes.
        let of = |bytes: &[u8]| {
            let mut h = KeyHash::default();
            h.write(bytes);
            h.finish()
        };
        assert_ne!(of(b"a"), of(b"b"));
    }
}
