//! A family of duration histograms with exemplars (prometheus-client's), limited in series.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::{Family, MetricConstructor};

use crate::exemplars::TraceLabels;
use crate::subscriber::OVERFLOW_LABEL;

/// A label set: (label name, value) pairs, in the order recorded.
pub(crate) type Labels = Vec<(Cow<'static, str>, Cow<'static, str>)>;

pub(crate) type Histogram = HistogramWithExemplars<TraceLabels>;

/// Makes each series' histogram with the configured bucket bounds.
#[derive(Clone, Debug)]
pub(crate) struct Buckets(pub(crate) Arc<[f64]>);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        HistogramWithExemplars::new(self.0.iter().copied())
    }
}

pub(crate) type HistogramFamily = Family<Labels, Histogram, Buckets>;

/// One metric: its series (a prometheus-client [`Family`], registered for the exposition), at most
/// `limit` of them, then the overflow series `otel_metric_overflow="true"`, as
/// [`MetricsSubscriber::cardinality_limit`](crate::MetricsSubscriber::cardinality_limit) does.
#[derive(Debug)]
pub(crate) struct LimitedHistograms {
    pub(crate) family: HistogramFamily,
    limit: usize,
    /// Series created (the overflow series not counted).
    series: AtomicUsize,
    /// Serialises the creation of series, so the limit is exact.
    create: Mutex<()>,
    overflowed: AtomicU64,
}

impl LimitedHistograms {
    pub(crate) fn new(buckets: Buckets, limit: usize) -> LimitedHistograms {
        LimitedHistograms {
            family: Family::new_with_constructor(buckets),
            limit,
            series: AtomicUsize::new(0),
            create: Mutex::new(()),
            overflowed: AtomicU64::new(0),
        }
    }

    /// Observes `seconds` in the series of `labels` (or the overflow series, counted), with the
    /// exemplar when there is one. A known series takes the family's read lock only.
    pub(crate) fn observe(&self, labels: Labels, seconds: f64, exemplar: Option<(TraceLabels, SystemTime)>) {
        let (exemplar, time) = match exemplar {
            Some((labels, time)) => (Some(labels), Some(time)),
            None => (None, None),
        };
        if let Some(histogram) = self.family.get(&labels) {
            histogram.observe(seconds, exemplar, time);
            return;
        }
        let histogram = {
            // A poisoned lock guards no data: a panic elsewhere leaves nothing half done here.
            let _creating = self.create.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if self.family.get(&labels).is_some() {
                self.family.get_or_create_owned(&labels)
            } else if self.series.load(Ordering::Relaxed) < self.limit {
                self.series.fetch_add(1, Ordering::Relaxed);
                self.family.get_or_create_owned(&labels)
            } else {
                self.overflowed.fetch_add(1, Ordering::Relaxed);
                self.family
                    .get_or_create_owned(&vec![(Cow::Borrowed(OVERFLOW_LABEL), Cow::Borrowed("true"))])
            }
        };
        histogram.observe(seconds, exemplar, time);
    }

    /// Series created, the overflow series not counted.
    pub(crate) fn series(&self) -> usize {
        self.series.load(Ordering::Relaxed)
    }

    /// Observations recorded in the overflow series.
    pub(crate) fn overflowed(&self) -> u64 {
        self.overflowed.load(Ordering::Relaxed)
    }
}
