//! [`NotifyLayer`]: tracing spans and events as notify events (tracing -> notify).

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use notify_core::{
    context::ContextGuard, event::Outcome, payload::EXCEPTION_KEY, suppression::is_telemetry_suppressed,
    Context as NotifyContext, Handle, Notifier, Payload, Value,
};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::fields::{PayloadVisitor, ERROR_FIELD};
use crate::names::EventNames;
use crate::reentry;
use crate::sites::Sites;

/// A [`tracing_subscriber::Layer`] that publishes tracing spans and events as notify events, so
/// what libraries instrument with `tracing` (tokio, hyper, sqlx, reqwest, your `#[instrument]`
/// functions) reaches notify subscribers: AS::N-style subscribers, log subscribers, the worker
/// pool, metrics, exporters.
///
/// * **A span** is one notify event, started when the span is created and finished when it
///   closes (so its duration is the span's lifetime, as `tracing-opentelemetry` measures it). Its
///   payload is the span's fields, those recorded later (`Span::record`) included. Its parent is
///   the innermost unfinished of either API: for an explicit parent, the nearest published span
///   among it and its ancestors; for a contextual one, the notify context current on the thread
///   at creation, which is the event of the innermost entered published span or a notify event
///   started inside it. While the span is entered, its event is the thread's notify context, so notify
///   events instrumented inside it are its children. Its outcome is `panicked` when the span
///   closes during a panic; an ERROR-level event with an `error` field inside it (what
///   `#[instrument(err)]` emits) records that error in its payload's `exception`.
/// * **An event** is one notify event of zero duration, finished at once, whose payload is its
///   fields (the text of `info!("…")` under `message`) plus `level` (`"INFO"`, …); its parent is
///   its span's event (explicit or contextual parent), else the current notify event.
/// * **Names** follow [`EventNames`] (default `"<span name>.<target>"`, `"<level>.<target>"`).
/// * **Cost**: a span or event nobody listens to in notify costs one cache-slot load, a pointer
///   comparison and the notify callsite's atomic load (on the global notifier; on another
///   notifier, one [`Notifier::listening`] lookup); `enter`, `exit`, `record` and `close` of spans
///   cost one atomic load while no published span is open. Measured in `benches/notifications.rs`
///   (`peers/layer_*`).
/// * **Telemetry suppression**: spans and events made on a thread where
///   [`notify_core::suppression::is_telemetry_suppressed`] holds (an exporter's own threads, a
///   [`notify_core::suppression::suppress_telemetry`]) are ignored, so an exporter subscribed to
///   every event does not export its client library's own tracing output, which would make more
///   of it, forever. Checked only for spans and events somebody listens to.
/// * Spans made by the notify -> tracing bridge ([`TracingForwarder`](crate::TracingForwarder))
///   are skipped, and notify events this layer publishes are skipped by that bridge, so with both
///   installed nothing is delivered twice.
///
/// ```
/// use notify_core::{Event, Notifier, Subscriber};
/// use notify_tracing::NotifyLayer;
/// use tracing_subscriber::prelude::*;
///
/// let notifier = Notifier::new();
/// let (tx, rx) = std::sync::mpsc::channel();
/// notifier.subscribe(notify_core::Pattern::glob("*.my_app")?, Subscriber::event(move |e: &Event| {
///     tx.send((e.name().to_owned(), e.payload().get("id").and_then(|v| v.as_i64()))).unwrap();
/// }));
/// let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info_span!(target: "my_app", "load", id = 7).in_scope(|| {});
/// });
/// assert_eq!(rx.recv()?, ("load.my_app".to_owned(), Some(7)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct NotifyLayer {
    shared: Arc<Shared>,
}

struct Shared {
    notifier: Notifier,
    sites: Sites,
    /// Published spans not closed yet: while 0, enter/exit/record/close return at once.
    open: AtomicUsize,
}

/// What a published span keeps in its extensions.
struct Published {
    handle: Handle,
}

thread_local! {
    /// The notify contexts attached by entered published spans, innermost last.
    static ENTERED: RefCell<Vec<(u64, ContextGuard)>> = const { RefCell::new(Vec::new()) };
}

impl Default for NotifyLayer {
    fn default() -> NotifyLayer {
        NotifyLayer::new()
    }
}

impl NotifyLayer {
    /// A layer publishing to the global notifier ([`Notifier::global`]) with the default
    /// [`EventNames`].
    pub fn new() -> NotifyLayer {
        NotifyLayer::build(Notifier::global().clone(), EventNames::default(), true)
    }

    /// A layer publishing to `notifier` with the default [`EventNames`].
    pub fn with_notifier(notifier: Notifier) -> NotifyLayer {
        NotifyLayer::build(notifier, EventNames::default(), false)
    }

    /// The same layer with other names (see [`EventNames`]).
    ///
    /// ```
    /// use notify_tracing::{EventNames, NotifyLayer};
    /// let layer = NotifyLayer::new().names(EventNames::default().events(|_| None));
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn names(self, names: EventNames) -> NotifyLayer {
        let global = self.shared.sites_global();
        NotifyLayer::build(self.shared.notifier.clone(), names, global)
    }

    fn build(notifier: Notifier, names: EventNames, global: bool) -> NotifyLayer {
        NotifyLayer {
            shared: Arc::new(Shared {
                notifier,
                sites: Sites::new(names, global),
                open: AtomicUsize::new(0),
            }),
        }
    }

    /// The notifier this layer publishes to.
    pub fn notifier(&self) -> &Notifier {
        &self.shared.notifier
    }
}

impl Shared {
    fn sites_global(&self) -> bool {
        self.sites.is_global()
    }

    /// A handle for `meta`'s event when somebody listens.
    #[inline]
    fn handle(&self, meta: &'static Metadata<'static>, payload: impl FnOnce() -> Payload) -> Option<Handle> {
        let target = self.sites.get(meta).target()?;
        if !target.is_enabled(&self.notifier) || is_telemetry_suppressed() {
            return None;
        }
        let handle = match target.callsite {
            Some(callsite) => callsite.handle(payload)?,
            None => self.notifier.build_handle(target.name, payload()),
        };
        Some(handle)
    }
}

/// The notify context of the nearest published span among `span` and its ancestors.
fn published_context<S>(span: Option<tracing_subscriber::registry::SpanRef<'_, S>>) -> Option<NotifyContext>
where
    S: for<'a> LookupSpan<'a>,
{
    span?.scope().find_map(|span| {
        let extensions = span.extensions();
        Some(extensions.get::<Published>()?.handle.context()?.context())
    })
}

impl<S> Layer<S> for NotifyLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let shared = &*self.shared;
        let Some(mut handle) = shared.handle(attrs.metadata(), || {
            let mut payload = Payload::new();
            attrs.record(&mut PayloadVisitor::new(&mut payload));
            payload
        }) else {
            return;
        };
        // A contextual parent is the thread's current notify context: an entered published span
        // attached its event there (`on_enter`), and a notify event started inside it replaced
        // it, so the current context is the innermost unfinished of either API (issue 35, item
        // 3). Taking the current tracing span's event instead skipped a notify event between it
        // and this span.
        let parent = if attrs.is_root() {
            None
        } else if let Some(parent) = attrs.parent() {
            published_context(ctx.span(parent))
        } else {
            None
        };
        if let Some(parent) = parent {
            let _ = handle.set_parent(parent);
        } else if attrs.is_root() {
            let _ = handle.set_parent(NotifyContext::none());
        }
        // A handle just made cannot have been started: this never fails.
        let _ = reentry::publishing(|| handle.start());
        let Some(span) = ctx.span(id) else {
            return;
        };
        span.extensions_mut().insert(Published { handle });
        shared.open.fetch_add(1, Ordering::Relaxed);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if self.shared.open.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(published) = extensions.get_mut::<Published>() {
            values.record(&mut PayloadVisitor::new(published.handle.payload_mut()));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let shared = &*self.shared;
        let meta = event.metadata();
        if *meta.level() == Level::ERROR && shared.open.load(Ordering::Relaxed) != 0 && !is_telemetry_suppressed() {
            record_error_in_span(event, &ctx);
        }
        let Some(target) = shared.sites.get(meta).target() else {
            return;
        };
        if !target.is_enabled(&shared.notifier) || is_telemetry_suppressed() {
            return;
        }
        let parent = match event.parent() {
            Some(parent) => published_context(ctx.span(parent)),
            None if event.is_root() => Some(NotifyContext::none()),
            None => None,
        };
        let payload = || {
            let mut payload = Payload::new();
            event.record(&mut PayloadVisitor::new(&mut payload));
            payload.insert("level", meta.level().as_str());
            payload
        };
        let _attached = parent.map(NotifyContext::attach);
        reentry::publishing(|| match target.callsite {
            Some(callsite) => callsite.instrument(payload, |_| ()),
            None => shared.notifier.instrument(target.name, payload, |_| ()),
        });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if self.shared.open.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let context = match span.extensions().get::<Published>() {
            Some(published) => published.handle.context(),
            None => return,
        };
        if let Some(context) = context {
            let guard = context.context().attach();
            ENTERED.with(|entered| entered.borrow_mut().push((id.into_u64(), guard)));
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        if self.shared.open.load(Ordering::Relaxed) == 0 {
            return;
        }
        let id = id.into_u64();
        let guard = ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            let at = entered.iter().rposition(|(span, _)| *span == id)?;
            Some(entered.remove(at).1)
        });
        drop(guard);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let shared = &*self.shared;
        if shared.open.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut published) = span.extensions_mut().remove::<Published>() else {
            return;
        };
        shared.open.fetch_sub(1, Ordering::Relaxed);
        if std::thread::panicking() {
            published.handle.set_outcome(Outcome::Panicked);
        }
        reentry::publishing(|| published.handle.finish().ok());
    }
}

/// An ERROR event with an `error` field: the error of its span (what `#[instrument(err)]` emits).
fn record_error_in_span<S>(event: &Event<'_>, ctx: &Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    if event.metadata().fields().field(ERROR_FIELD).is_none() {
        return;
    }
    let Some(span) = ctx.event_span(event) else {
        return;
    };
    let mut extensions = span.extensions_mut();
    let Some(published) = extensions.get_mut::<Published>() else {
        return;
    };
    let mut scratch = Payload::new();
    let mut visitor = PayloadVisitor::new(&mut scratch);
    event.record(&mut visitor);
    if let Some(message) = visitor.error {
        published.handle.payload_mut().insert(
            EXCEPTION_KEY,
            Value::Exception {
                type_name: std::any::type_name::<dyn std::error::Error>().into(),
                message,
            },
        );
    }
}

impl std::fmt::Debug for NotifyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyLayer")
            .field("notifier", &self.shared.notifier)
            .field("open_spans", &self.shared.open.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use notify_core::{
        suppression::suppress_telemetry, suppression::suppress_telemetry_on_this_thread, Event, Notifier, Pattern,
        Subscriber,
    };
    use tracing_subscriber::prelude::*;

    use super::NotifyLayer;

    #[test]
    fn spans_and_events_made_while_telemetry_is_suppressed_are_ignored() {
        let notifier = Notifier::new();
        let names: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = names.clone();
        let _subscription = notifier.subscribe(
            Pattern::all(),
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.name().to_owned())),
        );
        let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
        tracing::subscriber::with_default(subscriber, || {
            {
                let _suppressed = suppress_telemetry();
                tracing::info!(target: "quiet", "an event");
                tracing::info_span!(target: "quiet", "span").in_scope(|| {
                    tracing::debug!(target: "quiet", "inside");
                });
            }
            // A span made before the scope is published; an event made inside the scope is not,
            // nor does its error reach the span.
            tracing::info_span!(target: "loud", "span").in_scope(|| {
                let _suppressed = suppress_telemetry();
                tracing::error!(target: "quiet", error = "refused", "failed");
            });
            tracing::info!(target: "loud", "an event");
            // A thread suppressed for its whole life, with the same subscriber.
            let dispatch = tracing::dispatcher::get_default(Clone::clone);
            std::thread::spawn(move || {
                suppress_telemetry_on_this_thread();
                tracing::dispatcher::with_default(&dispatch, || {
                    tracing::info!(target: "quiet", "from a suppressed thread");
                    tracing::info_span!(target: "quiet", "span").in_scope(|| {});
                });
            })
            .join()
            .unwrap();
        });
        assert_eq!(*names.lock().unwrap(), ["span.loud", "info.loud"]);
    }
}
