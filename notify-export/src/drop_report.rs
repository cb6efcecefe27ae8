//! [`DropReporter`]: where an exporter reports the events it had to drop.

use std::sync::Mutex;

use notify_core::failure::ExportDrops;
use notify_core::Subscription;

/// The subscriptions an exporter reports its drops through: the failure hook of the first one
/// whose notifier is alive ([`Subscription::report_export_drops`]), so that drops reach the same
/// hook as subscriber panics and are counted in [`Notifier::failures`](notify_core::Notifier::failures).
///
/// An exporter's `subscribe(&notifier, pattern)` [`keep`](DropReporter::keep)s each subscription
/// it makes (the first [`DropReporter::MAX_SUBSCRIPTIONS`]: a few are enough, and an exporter
/// subscribed and unsubscribed in a loop must not grow the list without bound); its thread calls
/// [`report`](DropReporter::report) once per burst of drops. notify-opentelemetry and notify-nats
/// use one each.
///
/// ```
/// use notify_export::DropReporter;
/// use notify_core::failure::{ExportDrops, SubscriberFailure};
/// use notify_core::{Event, Notifier, Subscriber};
///
/// let notifier = Notifier::new();
/// notifier.set_failure_hook(|failure: &SubscriberFailure| eprintln!("{failure}"));
/// let reporter = DropReporter::new();
/// assert!(!reporter.report(ExportDrops::new("spans").with("queue full", 3)), "nowhere to report yet");
/// reporter.keep(&notifier.subscribe("query.sql", Subscriber::event(|_: &Event| {})));
/// assert!(reporter.report(ExportDrops::new("spans").with("queue full", 3)));
/// assert_eq!(notifier.failures(), 1);
/// ```
#[derive(Debug, Default)]
pub struct DropReporter {
    subscriptions: Mutex<Vec<Subscription>>,
}

impl DropReporter {
    /// How many subscriptions a reporter keeps (the first ones).
    pub const MAX_SUBSCRIPTIONS: usize = 16;

    /// A reporter with no subscription yet: [`report`](DropReporter::report) returns `false`.
    pub fn new() -> DropReporter {
        DropReporter::default()
    }

    /// Keeps `subscription` to report through, unless [`DropReporter::MAX_SUBSCRIPTIONS`] are kept.
    pub fn keep(&self, subscription: &Subscription) {
        let mut kept = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < Self::MAX_SUBSCRIPTIONS {
            kept.push(subscription.clone());
        }
    }

    /// Reports `drops` through the first kept subscription whose notifier is alive; `false` when
    /// none took it (none kept, all notifiers gone, or `drops` counts nothing): the caller then
    /// says it some other way (notify's exporters write a `log` warning).
    pub fn report(&self, drops: ExportDrops) -> bool {
        let subscriptions = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner()).clone();
        subscriptions.iter().any(|s| s.report_export_drops(drops.clone()))
    }
}
