//! Futures as events, and futures that carry a [`Context`]: [`Instrument`], [`Instrumented`],
//! [`WithContext`] (tracing's `Instrument::instrument` and `in_current_span`).

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use crate::context::{Context, ContextGuard};
use crate::event::Outcome;
use crate::handle::Handle;
use crate::payload::Payload;

/// Instruments any future: as one event ([`Instrument::instrument`]), or by carrying a context
/// into it ([`Instrument::in_current_context`], for `spawn`). Implemented for every `Future`.
///
/// ```
/// use notify_core::{Event, Instrument, Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
///
/// let notifier = Notifier::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// notifier.subscribe(notify_core::Pattern::all(), Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())));
///
/// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
/// let n = notifier.clone();
/// runtime.block_on(async move {
///     let request = async {
///         // Spawned work runs on any worker; it keeps the request's trace and parent.
///         let job = tokio::spawn(
///             async move { n.instrument("job.app", Payload::new, |_| ()) }.in_current_context(),
///         );
///         job.await.unwrap();
///     };
///     request.instrument(notifier.build_handle("request.app", Payload::new())).await;
/// });
/// let seen = seen.lock().unwrap();
/// let (job, request) = (&seen[0], &seen[1]);
/// assert_eq!(job.parent_id(), Some(request.id()));
/// assert_eq!(job.trace_id(), request.trace_id());
/// ```
pub trait Instrument: Future + Sized {
    /// This future as the event of `handle` (a [`Handle`] not started yet, e.g. from
    /// [`Notifier::build_handle`](crate::Notifier::build_handle), or the `Option<Handle>` of
    /// [`Callsite::handle`](crate::Callsite::handle)):
    ///
    /// * its parent is the context current *here*, where `instrument` is called (unless the handle
    ///   has an explicit parent, [`Handle::set_parent`]), so a future built in a request and
    ///   spawned elsewhere still belongs to the request;
    /// * it starts at the first poll and finishes when the future completes; dropped before that,
    ///   it finishes as [`Outcome::Cancelled`]; a poll that panics finishes it as
    ///   [`Outcome::Panicked`] and the panic goes on;
    /// * it is the current event only while the future is polled (and while it is dropped), so
    ///   futures interleaved on one thread never nest under each other; evented subscribers get
    ///   [`enter`](crate::EventedSubscriber::enter) and [`exit`](crate::EventedSubscriber::exit)
    ///   around each poll.
    ///
    /// Unlistened (a `None`, or a handle nobody listens to), a poll costs the inner poll and a
    /// branch.
    fn instrument(self, handle: impl Into<Option<Handle>>) -> Instrumented<Self> {
        let handle = handle.into().map(|mut handle| {
            // An explicit parent wins; a started handle keeps what it has.
            if !handle.has_parent() && !handle.is_started() {
                let _ = handle.set_parent(Context::current());
            }
            Box::new(handle)
        });
        Instrumented::new(self, handle, Nothing)
    }

    /// This future with the context current here (trace id and current event) attached while it is
    /// polled: events it starts, on whatever thread polls it, are children of the current event.
    /// `tokio::spawn(fut.in_current_context())` keeps spawned work in its request's trace. The
    /// [`Tags`](crate::Tags) current here are carried and attached too.
    fn in_current_context(self) -> WithContext<Self> {
        self.with_context(Context::current())
    }

    /// This future with `context` attached while it is polled (and while it is dropped), and the
    /// [`Tags`](crate::Tags) and [`Propagated`](crate::Propagated) (trace flags, `tracestate`,
    /// baggage) current here.
    fn with_context(self, context: Context) -> WithContext<Self> {
        WithContext {
            inner: ManuallyDrop::new(self),
            context,
            tags: crate::tags::Tags::current(),
            propagated: crate::propagated::Propagated::current(),
        }
    }
}

impl<F: Future> Instrument for F {}

/// What an instrumented future records from its output when it completes (the macro's `err` and
/// `ret`). Not part of the stable API.
#[doc(hidden)]
pub trait RecordOutput<T> {
    /// Adds what `output` tells to `payload`.
    fn record(&self, payload: &mut Payload, output: &T);
}

/// Records nothing.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Nothing;

impl<T> RecordOutput<T> for Nothing {
    #[inline(always)]
    fn record(&self, _: &mut Payload, _: &T) {}
}

/// A recording function (`record_err`, `record_ret`, …).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct RecordWith<R>(pub R);

impl<T, R: Fn(&mut Payload, &T)> RecordOutput<T> for RecordWith<R> {
    #[inline(always)]
    fn record(&self, payload: &mut Payload, output: &T) {
        (self.0)(payload, output);
    }
}

/// A future instrumented as one event: [`Instrument::instrument`].
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<F: Future, R: RecordOutput<F::Output> = Nothing> {
    inner: ManuallyDrop<F>,
    /// `None` once finished, or when nobody listens.
    handle: Option<Box<Handle>>,
    record: R,
}

impl<F: Future, R: RecordOutput<F::Output>> Instrumented<F, R> {
    /// `handle` is started (detached) at the first poll unless it is started already.
    pub(crate) fn new(inner: F, handle: Option<Box<Handle>>, record: R) -> Instrumented<F, R> {
        Instrumented {
            inner: ManuallyDrop::new(inner),
            handle,
            record,
        }
    }

    /// The event's handle while it runs (`None` when nobody listens or once finished).
    ///
    /// ```
    /// use notify_core::Instrument;
    /// let fut = async { 1 }.instrument(None);
    /// assert!(fut.handle().is_none());
    /// ```
    pub fn handle(&self) -> Option<&Handle> {
        self.handle.as_deref()
    }
}

/// Finishes the event as panicked when the inner poll unwinds (`armed` is cleared once it
/// returned, so a poll that runs while some other panic unwinds is not mistaken for one).
struct PollGuard<'a> {
    handle: &'a mut Option<Box<Handle>>,
    armed: bool,
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Some(mut handle) = self.handle.take() {
                handle.set_outcome(Outcome::Panicked);
                let _ = handle.finish();
            }
        }
    }
}

impl<F: Future, R: RecordOutput<F::Output>> Future for Instrumented<F, R> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` and it is dropped
        // in place (in `drop`); `handle` and `record` are not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above.
        let inner = unsafe { Pin::new_unchecked(&mut *this.inner) };
        let Some(handle) = &mut this.handle else {
            return inner.poll(cx);
        };
        if !handle.is_started() {
            // A fresh handle cannot be started already.
            let _ = handle.start();
            if !handle.is_listened() {
                this.handle = None;
                return inner.poll(cx);
            }
        }
        let mut guard = PollGuard {
            handle: &mut this.handle,
            armed: true,
        };
        let entered = guard.handle.as_deref().map(Handle::enter);
        let poll = inner.poll(cx);
        // The facts recorded in this poll move into the handle here.
        drop(entered);
        guard.armed = false;
        if let Poll::Ready(output) = &poll {
            if let Some(mut handle) = guard.handle.take() {
                // The body's facts first, then what its output tells (`ret`, `err`), as before.
                handle.add_recorded();
                this.record.record(handle.payload_mut(), output);
                let _ = handle.finish();
            }
        }
        poll
    }
}

impl<F: Future, R: RecordOutput<F::Output>> Drop for Instrumented<F, R> {
    fn drop(&mut self) {
        let started = self.handle.as_deref().is_some_and(Handle::is_started);
        let entered = self.handle.as_deref().filter(|_| started).map(Handle::enter);
        // SAFETY: dropped in place exactly once, never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        drop(entered);
        if let Some(mut handle) = self.handle.take() {
            if started {
                // A poll that panicked already finished the event (PollGuard); what is left was
                // dropped before completion, whatever else is unwinding.
                handle.set_outcome(Outcome::Cancelled);
                let _ = handle.finish();
            }
        }
    }
}

impl<F: Future, R: RecordOutput<F::Output>> std::fmt::Debug for Instrumented<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumented").field("handle", &self.handle).finish()
    }
}

/// A future that runs with a [`Context`] attached: [`Instrument::in_current_context`],
/// [`Instrument::with_context`].
#[must_use = "futures do nothing unless polled"]
pub struct WithContext<F> {
    inner: ManuallyDrop<F>,
    context: Context,
    /// The tags current where the future was wrapped.
    tags: crate::tags::Tags,
    /// What was propagated where the future was wrapped (moved in and out around each poll).
    propagated: crate::propagated::Propagated,
}

impl<F> WithContext<F> {
    /// The context attached while the future is polled.
    ///
    /// ```
    /// use notify_core::{Context, Instrument};
    /// assert_eq!(*async {}.with_context(Context::none()).context(), Context::none());
    /// ```
    pub fn context(&self) -> &Context {
        &self.context
    }
}

impl<F: Future> Future for WithContext<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned (never moved out, dropped in place in `drop`);
        // `context` is `Copy` and not pinned; `tags` and `propagated` are not pinned (cloned,
        // or swapped with the thread's slot and back).
        let this = unsafe { self.get_unchecked_mut() };
        let _attached: ContextGuard = this.context.attach();
        let _tags = this.tags.clone().attach();
        let _propagated = this.propagated.enter();
        // SAFETY: see above.
        unsafe { Pin::new_unchecked(&mut *this.inner) }.poll(cx)
    }
}

impl<F> Drop for WithContext<F> {
    fn drop(&mut self) {
        let _attached = self.context.attach();
        let _tags = self.tags.clone().attach();
        let _propagated = self.propagated.enter();
        // SAFETY: dropped in place exactly once, never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}

impl<F> std::fmt::Debug for WithContext<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithContext").field("context", &self.context).finish()
    }
}
