//! The recorder on the export collector: [`TraceRecorder`] as a [`Sink`], and
//! [`TraceRecorder::collect`], which subscribes it through a [`Collector`].

use std::sync::Arc;
use std::time::Duration;

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use notify_export::{ready, Collector, CollectorBuilder, Sink, SinkFuture};

use crate::recorder::TraceRecorder;

/// The recorder takes each batch the collector hands it: every event into the per-name
/// statistics, and into the trace store through the recorder's own tail-sampling stage when
/// [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling) is set (the statistics see
/// every event, so the stage stays the recorder's rather than the collector's). It never refuses a
/// batch.
impl Sink for TraceRecorder {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        for event in batch {
            self.record_shared(event);
        }
        ready(Ok(()))
    }
}

/// A recorder subscribed through an export collector ([`TraceRecorder::collect`]): the
/// subscription, and the collector (its counters, flush and shutdown).
#[derive(Debug)]
pub struct Collected {
    /// The subscription on the notifier (unsubscribe it to stop recording).
    pub subscription: Subscription,
    /// The collector between the instrumenting threads and the recorder.
    pub collector: Collector,
}

/// The subscription: sampled events to the collector, nothing else on the instrumenting thread.
struct Sampled(Collector);

impl OwnedEventSubscriber for Sampled {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        // Head sampling: the page shows sampled traces only (notify_core::export::Sampler).
        if event.is_sampled() {
            self.0.push(event);
        }
    }
}

impl TraceRecorder {
    /// Subscribes this recorder to the events of `notifier` that `pattern` matches through an
    /// export collector named `"notify-web"` ([`Collector`]: a queue per publishing thread,
    /// batches recorded on the collector's thread, every drop counted and reported through
    /// `notifier`'s failure hook) that hands batches to at most every 100 ms. The other way to
    /// subscribe it, [`subscribe`](TraceRecorder::subscribe), delivers through a notify-pool worker
    /// pool instead.
    ///
    /// ```
    /// use notify_core::{Notifier, Pattern, Payload};
    /// use notify_web::{TraceRecorder, WebOptions};
    ///
    /// let notifier = Notifier::new();
    /// let recorder = TraceRecorder::new(WebOptions::new().traces(10));
    /// let collected = recorder.collect(&notifier, Pattern::all());
    /// notifier.instrument("request.app", Payload::new, |_| {
    ///     notifier.instrument("query.sql", Payload::new, |_| ());
    /// });
    /// let stats = collected.collector.force_flush(std::time::Duration::from_secs(5)).unwrap();
    /// assert_eq!((stats.exported, stats.dropped()), (2, 0));
    /// assert_eq!(recorder.traces()[0].events().len(), 2);
    /// ```
    pub fn collect(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Collected {
        self.collect_with(notifier, pattern, |builder| builder)
    }

    /// As [`collect`](TraceRecorder::collect), with the collector configured by `configure`
    /// (queue capacity, overflow policy, batch size, delay, drop hook).
    pub fn collect_with(
        &self,
        notifier: &Notifier,
        pattern: impl Into<Pattern>,
        configure: impl FnOnce(CollectorBuilder<TraceRecorder>) -> CollectorBuilder<TraceRecorder>,
    ) -> Collected {
        let builder = Collector::builder("notify-web", self.clone()).scheduled_delay(Duration::from_millis(100));
        let collector = configure(builder).build();
        let subscription = notifier.subscribe(
            pattern,
            Subscriber::owned(Sampled(collector.clone())).named("notify-web"),
        );
        collector.report_through(&subscription);
        Collected {
            subscription,
            collector,
        }
    }
}
