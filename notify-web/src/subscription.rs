//! [`TraceRecorder::subscribe`]: the usual way to attach the live page to a notifier (with
//! `subscribe_with` to configure its collector), and the [`WebSubscription`] it returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use notify_export::{Collector, CollectorBuilder, ExportError, ExportStats};

use crate::recorder::TraceRecorder;
use crate::sink::TraceSink;

/// The live page attached to a notifier ([`TraceRecorder::subscribe`]): the subscription, the
/// export collector between the instrumenting threads and the recorder, and, with
/// [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling), the collector that
/// tail-samples in front of the trace store.
///
/// Dropping it leaves the recorder subscribed (as dropping a [`Subscription`] does);
/// [`unsubscribe`](Self::unsubscribe) stops it, and once the notifier no longer holds the
/// subscriber and this is dropped, the collectors shut down in the background (exporting what
/// they hold first).
#[derive(Debug)]
pub struct WebSubscription {
    subscription: Subscription,
    collector: Collector,
    tail: Option<Collector>,
}

impl WebSubscription {
    /// The subscription on the notifier.
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// The collector between the instrumenting threads and the recorder (named `"notify-web"`):
    /// its counters ([`Collector::stats`]: events recorded as `exported`, dropped by cause).
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// The collector that tail-samples in front of the trace store (named `"notify-web-traces"`),
    /// when [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling) is set: its counters
    /// (`exported`: events stored; `dropped_tail_sampling`; `held`) and
    /// [`Collector::tail_stats`].
    pub fn tail_collector(&self) -> Option<&Collector> {
        self.tail.as_ref()
    }

    /// Records everything published before this call (in the statistics, and in the trace store
    /// unless tail sampling holds it for its trace's root), waiting at most `timeout`; returns the
    /// counters of [`collector`](Self::collector) after it. A request that times out leaves
    /// nothing behind ([`Collector::force_flush`]).
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the collectors did not get there in time;
    /// [`ExportError::ShutDown`] after [`shutdown`](Self::shutdown).
    pub fn force_flush(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        self.collector.force_flush(timeout)
    }

    /// Unsubscribes from the notifier, records what is queued, lets tail sampling decide every
    /// trace it holds, and stops the collectors' threads; waits at most `timeout`. Returns the
    /// final counters of [`collector`](Self::collector). The recorder keeps what it recorded
    /// (the page still serves it).
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the collector did not finish in time (it stops after the
    /// batch it is recording); [`ExportError::ShutDown`] when already shut down.
    pub fn shutdown(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let deadline = Instant::now() + timeout;
        let _ = self.subscription.unsubscribe();
        let stats = self.collector.shutdown(timeout)?;
        if let Some(tail) = &self.tail {
            // Normally done by the sink's shutdown already (then this answers at once).
            match tail.shutdown(deadline.saturating_duration_since(Instant::now())) {
                Ok(_) | Err(ExportError::ShutDown(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(stats)
    }

    /// Stops recording: unsubscribes from the notifier (what is queued is still recorded, in
    /// the background). As [`Subscription::unsubscribe`].
    ///
    /// # Errors
    /// As [`Subscription::unsubscribe`]: when the subscription was already removed.
    pub fn unsubscribe(&self) -> Result<(), notify_core::NotifyError> {
        self.subscription.unsubscribe()
    }
}

/// The subscriber: sampled events to the collector, nothing else on the instrumenting thread.
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
    /// Attaches this recorder to the events of `notifier` that `pattern` matches
    /// ([`Pattern::all`]: every event) of sampled traces (head sampling: [`Event::is_sampled`]),
    /// through notify-export's collector: the instrumenting thread only hands the shared event
    /// over (a queue per publishing thread, no lock); the collector's thread (named
    /// `notify-export`) records batches at least every 100 ms through a [`TraceSink`]. With
    /// [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling), a second collector
    /// tail-samples in front of the trace store ([`TraceSink`] says how).
    ///
    /// Every event lost on the way is counted by cause in the collectors' counters and reported
    /// once per burst through `notifier`'s failure hook ([`Collector`]). The defaults: queues of
    /// 8,192 events per publishing thread, newest dropped when full, batches of 512;
    /// [`subscribe_with`](Self::subscribe_with) changes them.
    ///
    /// ```
    /// use std::time::Duration;
    /// use notify_core::{Notifier, Pattern, Payload};
    /// use notify_web::{TraceRecorder, WebOptions};
    ///
    /// let notifier = Notifier::new();
    /// let recorder = TraceRecorder::new(WebOptions::new().traces(10));
    /// let live = recorder.subscribe(&notifier, Pattern::all());
    /// notifier.instrument("request.app", Payload::new, |_| {
    ///     notifier.instrument("query.sql", Payload::new, |_| ());
    /// });
    /// let stats = live.force_flush(Duration::from_secs(5))?;
    /// assert_eq!((stats.exported, stats.dropped()), (2, 0));
    /// assert_eq!(recorder.traces()[0].events().len(), 2);
    /// # Ok::<(), notify_export::ExportError>(())
    /// ```
    ///
    /// # Panics
    /// When a collector's thread cannot be spawned.
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> WebSubscription {
        self.subscribe_with(notifier, pattern, |builder| builder)
    }

    /// As [`subscribe`](Self::subscribe), with the collector in front of the recorder
    /// configured by `configure` (queue capacity, overflow policy, batch size, delay, drop hook,
    /// runtime). Tail sampling is [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling),
    /// not this builder's: set here, the statistics would see only the traces it keeps.
    ///
    /// # Panics
    /// As [`subscribe`](Self::subscribe).
    pub fn subscribe_with(
        &self,
        notifier: &Notifier,
        pattern: impl Into<Pattern>,
        configure: impl FnOnce(CollectorBuilder<TraceSink>) -> CollectorBuilder<TraceSink>,
    ) -> WebSubscription {
        let sink = self.sink();
        let tail = sink.tail_collector().cloned();
        let builder = Collector::builder("notify-web", sink).scheduled_delay(Duration::from_millis(100));
        let collector = configure(builder).build();
        let subscription = notifier.subscribe(
            pattern,
            Subscriber::owned(Sampled(collector.clone())).named("notify-web"),
        );
        collector.report_through(&subscription);
        if let Some(tail) = &tail {
            tail.report_through(&subscription);
        }
        WebSubscription {
            subscription,
            collector,
            tail,
        }
    }
}
