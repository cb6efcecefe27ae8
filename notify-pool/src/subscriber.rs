//! [`AsyncSubscriber`]: the callback of an async subscriber.

use std::sync::Arc;

use notify_core::Event;

/// The callback of an async subscriber, run on a pool worker with the shared event. Implemented by
/// every `Fn(&Event) + Send + Sync + 'static`; implement it yourself to keep the `Arc` (an exporter
/// that batches events, say).
///
/// ```
/// use notify_pool::{AsyncOptions, AsyncSubscriber, WorkerPool};
/// use notify_core::{Event, Notifier, Payload};
/// use std::sync::{Arc, Mutex};
///
/// struct Keep(Mutex<Vec<Arc<Event>>>);
/// impl AsyncSubscriber for Keep {
///     fn call(&self, event: &Arc<Event>) { self.0.lock().unwrap().push(event.clone()); }
/// }
/// let kept = Arc::new(Keep(Mutex::new(Vec::new())));
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = Notifier::new();
/// pool.subscribe(&notifier, "run.job", AsyncOptions::new(), kept.clone());
/// notifier.instrument("run.job", Payload::new, |_| ());
/// pool.flush();
/// assert_eq!(kept.0.lock().unwrap()[0].name(), "run.job");
/// ```
pub trait AsyncSubscriber: Send + Sync + 'static {
    /// Receives one event, on a worker thread, never concurrently with itself.
    fn call(&self, event: &Arc<Event>);
}

impl<F> AsyncSubscriber for F
where
    F: Fn(&Event) + Send + Sync + 'static,
{
    fn call(&self, event: &Arc<Event>) {
        self(event);
    }
}

impl<T: AsyncSubscriber + ?Sized> AsyncSubscriber for Arc<T> {
    fn call(&self, event: &Arc<Event>) {
        (**self).call(event);
    }
}
