//! Which events may become an exemplar: [`ExemplarFilter`], and the tail-sampling check.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use notify_core::event::EventId;
use notify_core::export::TailSampling;
use notify_core::{Event, TraceId};
use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};

/// The labels of an exemplar: `trace_id` (32 lowercase hex digits) and `span_id` (the event id,
/// 16), as OpenTelemetry's exporters and Grafana's trace links name them. The ids are kept as
/// they are and written as hex only when the exposition is rendered: recording allocates nothing
/// for them.
pub(crate) type TraceLabels = [(&'static str, TraceLabel); 2];

/// A trace id or a span id, written in the W3C trace-context form.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TraceLabel {
    Trace(TraceId),
    Span(EventId),
}

impl EncodeLabelValue for TraceLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        match self {
            TraceLabel::Trace(id) => write!(encoder, "{id}"),
            TraceLabel::Span(id) => write!(encoder, "{id}"),
        }
    }
}

/// Which measurements may carry an exemplar: OpenTelemetry's `ExemplarFilter` (metrics SDK
/// specification), whose names these are.
///
/// Whatever the filter, an exemplar is only ever the latest qualifying event of its bucket (one
/// per bucket and series: bounded memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExemplarFilter {
    /// No exemplars.
    AlwaysOff,
    /// Every event, sampled or not: an exemplar may point to a trace no exporter kept.
    AlwaysOn,
    /// Only events whose trace is sampled ([`Event::is_sampled`]: head sampling by the
    /// notifier's [`Sampler`](notify_core::export::Sampler), the W3C sampled flag of a caller
    /// honoured): OpenTelemetry's default, and this crate's.
    #[default]
    TraceBased,
}

/// Why an event got no exemplar, counted ([`ExemplarStats`]).
#[derive(Debug, Default)]
pub(crate) struct ExemplarCounts {
    attached: AtomicU64,
    not_sampled: AtomicU64,
    not_surely_kept: AtomicU64,
    off: AtomicU64,
}

/// What became of the events offered as exemplars: attached, or left out by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExemplarStats {
    /// Measurements recorded with an exemplar (each replaced its bucket's previous one).
    pub attached: u64,
    /// Left out: the event's trace was not sampled (head sampling, [`ExemplarFilter::TraceBased`]).
    pub not_sampled: u64,
    /// Left out: the tail-sampling policy given to
    /// [`PrometheusExporter::tail_sampling`](crate::PrometheusExporter::tail_sampling) might drop
    /// the trace ([`TailSampling::keeps_for_sure`] is false).
    pub not_surely_kept: u64,
    /// Left out: [`ExemplarFilter::AlwaysOff`].
    pub off: u64,
}

/// The filter and the tail-sampling policy, deciding per event.
#[derive(Clone, Debug)]
pub(crate) struct ExemplarPolicy {
    pub(crate) filter: ExemplarFilter,
    pub(crate) tail: Option<TailSampling>,
}

impl ExemplarPolicy {
    /// The exemplar labels and time of `event`, when it may be one; counts the decision.
    pub(crate) fn exemplar(&self, event: &Event, counts: &ExemplarCounts) -> Option<(TraceLabels, SystemTime)> {
        let refused = match self.filter {
            ExemplarFilter::AlwaysOff => Some(&counts.off),
            ExemplarFilter::AlwaysOn => None,
            ExemplarFilter::TraceBased if !event.is_sampled() => Some(&counts.not_sampled),
            ExemplarFilter::TraceBased => match &self.tail {
                Some(tail) if !tail.keeps_for_sure(event) => Some(&counts.not_surely_kept),
                _ => None,
            },
        };
        if let Some(counter) = refused {
            counter.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        counts.attached.fetch_add(1, Ordering::Relaxed);
        let labels = [
            ("trace_id", TraceLabel::Trace(event.trace_id())),
            ("span_id", TraceLabel::Span(event.id())),
        ];
        Some((labels, event.end_time()))
    }
}

impl ExemplarCounts {
    pub(crate) fn stats(&self) -> ExemplarStats {
        ExemplarStats {
            attached: self.attached.load(Ordering::Relaxed),
            not_sampled: self.not_sampled.load(Ordering::Relaxed),
            not_surely_kept: self.not_surely_kept.load(Ordering::Relaxed),
            off: self.off.load(Ordering::Relaxed),
        }
    }
}
