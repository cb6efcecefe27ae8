//! The end-of-run summary: an event-object subscriber that keeps, per event name (and per SQL
//! statement name), the count, the total and an HDR histogram of durations.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use notify_core::{Event, Notifier, Pattern, Subscriber, Subscription, Value};

/// One line of the summary.
///
/// ```
/// use notify_app::bookstore::SummaryRow;
/// use std::time::Duration;
/// let row = SummaryRow { event: "query.sql".into(), name: None, count: 2, total: Duration::from_micros(300), p50: Duration::from_micros(100), p99: Duration::from_micros(200) };
/// assert_eq!(row.label(), "query.sql");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryRow {
    /// The event name.
    pub event: String,
    /// The payload's `name` (e.g. `"Book Load"`) for a per-statement row; `None` for the row of
    /// the whole event name.
    pub name: Option<String>,
    /// How many events.
    pub count: u64,
    /// Sum of their durations.
    pub total: Duration,
    /// Median duration (HDR histogram, 3 significant digits).
    pub p50: Duration,
    /// 99th percentile duration.
    pub p99: Duration,
}

impl SummaryRow {
    /// The first column: the event name, or two spaces and the statement name.
    ///
    /// ```
    /// # use notify_app::bookstore::SummaryRow;
    /// # use std::time::Duration;
    /// let row = SummaryRow { event: "query.sql".into(), name: Some("Book Load".into()), count: 1, total: Duration::ZERO, p50: Duration::ZERO, p99: Duration::ZERO };
    /// assert_eq!(row.label(), "  Book Load");
    /// ```
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("  {name}"),
            None => self.event.clone(),
        }
    }
}

struct Stat {
    count: u64,
    total: Duration,
    histogram: Histogram<u64>,
}

impl Stat {
    fn new() -> Stat {
        Stat {
            count: 0,
            total: Duration::ZERO,
            // Nanoseconds from 1 ns to 1 hour, three significant digits; longer is clamped.
            histogram: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds"),
        }
    }

    fn record(&mut self, duration: Duration) {
        self.count += 1;
        self.total += duration;
        self.histogram
            .saturating_record(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
    }
}

type Stats = BTreeMap<(String, Option<String>), Stat>;

/// Subscribes to every event of a notifier and summarises their durations.
///
/// ```
/// use notify_app::bookstore::Summary;
/// use notify_core::{Notifier, Payload};
/// let notifier = Notifier::new();
/// let summary = Summary::subscribe(&notifier);
/// for _ in 0..3 {
///     notifier.instrument("query.sql", || Payload::new().with("name", "Book Load"), |_| ());
/// }
/// let rows = summary.rows();
/// assert_eq!(rows.iter().map(|r| (r.label(), r.count)).collect::<Vec<_>>(), [("query.sql".to_owned(), 3), ("  Book Load".to_owned(), 3)]);
/// ```
pub struct Summary {
    stats: Arc<Mutex<Stats>>,
    subscription: Subscription,
}

impl Summary {
    /// Subscribes an event-object subscriber to every event of `notifier`.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let _summary = notify_app::bookstore::Summary::subscribe(&notifier);
    /// assert!(notifier.listening("anything.at_all"));
    /// ```
    pub fn subscribe(notifier: &Notifier) -> Summary {
        let stats: Arc<Mutex<Stats>> = Arc::default();
        let sink = stats.clone();
        let subscription = notifier.subscribe(
            Pattern::all(),
            Subscriber::event(move |event: &Event| {
                let duration = event.duration();
                let mut stats = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                let event_name = event.name().to_owned();
                stats
                    .entry((event_name.clone(), None))
                    .or_insert_with(Stat::new)
                    .record(duration);
                if let Some(name) = event.payload().get("name").and_then(Value::as_str) {
                    stats
                        .entry((event_name, Some(name.to_owned())))
                        .or_insert_with(Stat::new)
                        .record(duration);
                }
            })
            .named("summary"),
        );
        Summary { stats, subscription }
    }

    /// The rows, sorted by event name, each followed by its per-statement rows sorted by name.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let summary = notify_app::bookstore::Summary::subscribe(&notifier);
    /// notifier.instrument("b.x", notify_core::Payload::new, |_| ());
    /// notifier.instrument("a.x", notify_core::Payload::new, |_| ());
    /// let names: Vec<String> = summary.rows().into_iter().map(|r| r.event).collect();
    /// assert_eq!(names, ["a.x", "b.x"]);
    /// ```
    pub fn rows(&self) -> Vec<SummaryRow> {
        let stats = self.stats.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        stats
            .iter()
            .map(|((event, name), stat)| SummaryRow {
                event: event.clone(),
                name: name.clone(),
                count: stat.count,
                total: stat.total,
                p50: Duration::from_nanos(stat.histogram.value_at_quantile(0.5)),
                p99: Duration::from_nanos(stat.histogram.value_at_quantile(0.99)),
            })
            .collect()
    }

    /// Stops collecting; returns the rows collected.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let summary = notify_app::bookstore::Summary::subscribe(&notifier);
    /// notifier.instrument("a.x", notify_core::Payload::new, |_| ());
    /// assert_eq!(summary.finish()[0].count, 1);
    /// assert!(!notifier.listening("a.x"));
    /// ```
    pub fn finish(self) -> Vec<SummaryRow> {
        let _ = self.subscription.unsubscribe();
        self.rows()
    }
}

/// The rows as a table, durations in milliseconds with three decimals:
///
/// ```text
/// event                       count    total ms      p50 ms      p99 ms
/// query.sql                      50      12.345       0.041       0.512
///   Book Load                    12       1.234       0.050       0.300
/// ```
///
/// ```
/// use notify_app::bookstore::{render_summary, SummaryRow};
/// use std::time::Duration;
/// let row = SummaryRow { event: "x.y".into(), name: None, count: 2, total: Duration::from_micros(1500), p50: Duration::from_micros(700), p99: Duration::from_micros(800) };
/// let table = render_summary(&[row]);
/// assert_eq!(table.lines().nth(1), Some("x.y                              2       1.500       0.700       0.800"));
/// ```
pub fn render_summary(rows: &[SummaryRow]) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut out = format!(
        "{:<26} {:>7} {:>11} {:>11} {:>11}\n",
        "event", "count", "total ms", "p50 ms", "p99 ms"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<26} {:>7} {:>11.3} {:>11.3} {:>11.3}",
            row.label(),
            row.count,
            ms(row.total),
            ms(row.p50),
            ms(row.p99)
        );
    }
    out
}
