//! [`Propagated`]: what a request carries to the next service beside its [`Context`](crate::Context)'s ids: the
//! W3C trace flags of its trace (Level 2's *random* flag), its `tracestate`, and its W3C baggage.

use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use crate::baggage::Baggage;
use crate::trace_flags::TraceFlags;
use crate::trace_id::TraceId;
use crate::tracestate::TraceState;

thread_local! {
    /// What is propagated from this thread's current scope: one pointer, swapped in and out.
    static CURRENT: Cell<Option<Arc<Fields>>> = const { Cell::new(None) };
}

/// The record behind a non-empty [`Propagated`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Fields {
    /// The trace `flags` and `state` belong to; 0: none.
    trace: u128,
    flags: TraceFlags,
    state: TraceState,
    baggage: Baggage,
}

/// The empty record, for reads of an empty [`Propagated`].
static EMPTY: Fields = Fields {
    trace: 0,
    flags: TraceFlags::NONE,
    state: TraceState::new(),
    baggage: Baggage::new(),
};

/// What a request carries to the services it calls beside the trace and parent ids of its
/// [`Context`](crate::Context) (OpenTelemetry keeps the same things in its `Context`: the span context's trace
/// flags and trace state, and the baggage):
///
/// * the W3C **trace flags** of one trace, beyond the sampling decision the `Context` holds:
///   Level 2's *random* flag, set when the trace id was generated randomly (by notify for a trace
///   it starts, or as an incoming `traceparent` says);
/// * the **`tracestate`** of that trace ([`TraceState`]);
/// * the **baggage** ([`Baggage`]), which belongs to the request, not to a trace.
///
/// The trace flags and the `tracestate` apply only to their trace: [`Propagated::flags_for`] and
/// [`Propagated::state_for`] give them for the trace of a context, and nothing for another trace
/// (a context attached for other work). It lives beside the `Copy` [`Context`](crate::Context), as
/// [`Tags`](crate::Tags) do: a scope makes it current ([`Propagated::attach`],
/// [`Propagated::in_scope`], [`Propagated::scope`] for futures), and
/// [`Instrument::in_current_context`](crate::Instrument::in_current_context) carries it into
/// spawned work with the context. notify-http's server layer makes the incoming one current for
/// the handler, its client layer sends the current one with every call. Empty, it holds no
/// allocation (it is one pointer); a clone is a reference-count increment.
///
/// ```
/// use notify_core::context::{self, Propagated};
/// use notify_core::{baggage::Baggage, trace_context::{TraceFlags, TraceState}, Context, TraceId};
///
/// let trace = TraceId::new(0x4bf9).unwrap();
/// let state: TraceState = "congo=t61rcWkgMzE".parse().unwrap();
/// let propagated = Propagated::for_trace(trace, TraceFlags::RANDOM, state.clone())
///     .with_baggage(Baggage::new().with("tenant", "acme").unwrap());
/// propagated.in_scope(|| {
///     assert_eq!(context::baggage().get("tenant"), Some("acme"));
///     Context::new(trace, None).in_scope(|| assert_eq!(context::trace_state(), state));
///     // Another trace: its own tracestate (none), the same baggage.
///     assert!(context::trace_state().is_empty());
/// });
/// assert!(context::baggage().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Propagated {
    fields: Option<Arc<Fields>>,
}

impl Propagated {
    /// Nothing propagated.
    pub const fn new() -> Propagated {
        Propagated { fields: None }
    }

    fn fields(&self) -> &Fields {
        self.fields.as_deref().unwrap_or(&EMPTY)
    }

    fn fields_mut(&mut self) -> &mut Fields {
        Arc::make_mut(self.fields.get_or_insert_with(Default::default))
    }

    /// The trace flags and `tracestate` of `trace_id` (as received in its `traceparent`, or
    /// [`TraceFlags::RANDOM`] for a trace id this process generated).
    pub fn for_trace(trace_id: TraceId, flags: TraceFlags, state: TraceState) -> Propagated {
        Propagated {
            fields: Some(Arc::new(Fields {
                trace: trace_id.get(),
                flags,
                state,
                baggage: Baggage::new(),
            })),
        }
    }

    /// The same with `baggage` instead of its own.
    #[must_use]
    pub fn with_baggage(mut self, baggage: Baggage) -> Propagated {
        if self.fields.is_some() || !baggage.is_empty() {
            self.fields_mut().baggage = baggage;
        }
        self
    }

    /// The same with `state` as its trace's `tracestate` (a service updating its own entry,
    /// [`TraceState::with`]). A record of no trace yet (a request that came without
    /// `tracestate` and baggage, or without `traceparent`: notify-http makes no record for it)
    /// takes the trace of the current [`Context`](crate::Context), and its random flag, so that
    /// `Propagated::current().with_trace_state(state)` in a handler always applies to the
    /// request's trace.
    ///
    /// ```
    /// use notify_core::{context::{self, Propagated}, Context};
    /// let context = Context::new_trace();
    /// context.in_scope(|| {
    ///     let state = context::trace_state().with("acme", "1").unwrap();
    ///     Propagated::current().with_trace_state(state).in_scope(|| {
    ///         assert_eq!(context::trace_state().as_str(), "acme=1");
    ///         assert!(Propagated::current().flags_for(context.trace_id().unwrap()).is_random());
    ///     });
    /// });
    /// ```
    #[must_use]
    pub fn with_trace_state(mut self, state: TraceState) -> Propagated {
        let fields = self.fields_mut();
        if fields.trace == 0 {
            // The current context's frame (what `Context::current` reads: this module stays
            // below `context` in the crate's module order).
            let current = crate::ids::current();
            if current.trace != 0 {
                fields.trace = current.trace;
                fields.flags = TraceFlags::NONE.with_random(current.flags & crate::ids::RANDOM != 0);
            }
        }
        fields.state = state;
        self
    }

    /// What is propagated from this thread's current scope (empty outside any).
    pub fn current() -> Propagated {
        CURRENT.with(|current| {
            let fields = current.take();
            let copy = fields.clone();
            current.set(fields);
            Propagated { fields: copy }
        })
    }

    /// The trace the flags and `tracestate` belong to.
    pub fn trace_id(&self) -> Option<TraceId> {
        TraceId::new(self.fields().trace)
    }

    /// The trace flags as received or generated.
    pub fn trace_flags(&self) -> TraceFlags {
        self.fields().flags
    }

    /// The `tracestate`.
    pub fn trace_state(&self) -> &TraceState {
        &self.fields().state
    }

    /// The baggage.
    pub fn baggage(&self) -> &Baggage {
        &self.fields().baggage
    }

    /// The trace flags of `trace` beyond *sampled*: this record's when it is of that trace,
    /// else none.
    pub fn flags_for(&self, trace: TraceId) -> TraceFlags {
        let fields = self.fields();
        if fields.trace == trace.get() {
            fields.flags.with_sampled(false)
        } else {
            TraceFlags::NONE
        }
    }

    /// The `tracestate` of `trace`: this record's when it is of that trace, else `None`.
    pub fn state_for(&self, trace: TraceId) -> Option<&TraceState> {
        let fields = self.fields();
        (fields.trace == trace.get() && !fields.state.is_empty()).then_some(&fields.state)
    }

    /// True when nothing is propagated.
    pub fn is_empty(&self) -> bool {
        let fields = self.fields();
        fields.trace == 0 && fields.state.is_empty() && fields.baggage.is_empty()
    }

    /// Makes this current on this thread until the guard drops (then the previous one is current
    /// again). Guards must drop in the reverse order of their `attach`, as they do in blocks.
    pub fn attach(self) -> PropagatedGuard {
        let previous = CURRENT.with(|current| current.replace(self.fields));
        PropagatedGuard {
            previous: Some(Propagated { fields: previous }),
            _not_send: PhantomData,
        }
    }

    /// Runs `f` with this current.
    pub fn in_scope<T>(self, f: impl FnOnce() -> T) -> T {
        let _guard = self.attach();
        f()
    }

    /// Makes this current while the returned guard lives, by moving it into the thread's slot
    /// and back (no clone): what a future or body wrapper does around each poll.
    #[inline]
    pub fn enter(&mut self) -> PropagatedEntered<'_> {
        self.swap_with_current();
        PropagatedEntered {
            slot: self,
            _not_send: PhantomData,
        }
    }

    /// `future` with this current while it is polled.
    pub fn scope<F: Future>(self, future: F) -> WithPropagated<F> {
        WithPropagated {
            inner: future,
            propagated: self,
        }
    }
}

/// The guard of [`Propagated::attach`]. Not `Send`.
#[must_use = "the record is current only while the guard lives"]
#[derive(Debug)]
pub struct PropagatedGuard {
    previous: Option<Propagated>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for PropagatedGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // During thread exit the slot may be gone: nothing to restore then.
            let _ = CURRENT.try_with(|current| current.set(previous.fields));
        }
    }
}

/// The guard of [`Propagated::enter`]: moves the record back where it came from.
#[must_use = "the record is current only while the guard lives"]
#[derive(Debug)]
pub struct PropagatedEntered<'a> {
    slot: &'a mut Propagated,
    _not_send: PhantomData<*const ()>,
}

impl Drop for PropagatedEntered<'_> {
    #[inline]
    fn drop(&mut self) {
        swap_with_current(&mut self.slot.fields);
    }
}

impl Propagated {
    /// Swaps this record with the thread's current one: what [`Propagated::enter`] and its
    /// guard do, for a guard of another module that holds the record itself.
    #[inline(always)]
    pub(crate) fn swap_with_current(&mut self) {
        swap_with_current(&mut self.fields);
    }
}

/// Swaps `fields` with the thread's current record (nothing happens while the thread exits and
/// its slot is gone: then `fields` keeps its value, so entering and leaving stay symmetric).
#[inline]
fn swap_with_current(fields: &mut Option<Arc<Fields>>) {
    let mut value = fields.take();
    let _ = CURRENT.try_with(|current| value = current.replace(value.take()));
    *fields = value;
}

pin_project_lite::pin_project! {
    /// A future with a [`Propagated`] current while it is polled ([`Propagated::scope`]).
    #[derive(Debug)]
    pub struct WithPropagated<F> {
        #[pin]
        inner: F,
        propagated: Propagated,
    }
}

impl<F: Future> Future for WithPropagated<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.propagated.enter();
        this.inner.poll(cx)
    }
}

/// The baggage of the current scope (empty outside any): what notify-http's client layer sends
/// with a call made here. Inside a request served behind notify-http's server layer, the
/// request's baggage (and whatever the handler set with [`with_baggage`]).
///
/// ```
/// use notify_core::{baggage::Baggage, context};
/// let baggage = Baggage::new().with("tenant", "acme").unwrap();
/// assert_eq!(context::with_baggage(baggage, || context::baggage().get("tenant").map(str::to_owned)), Some("acme".into()));
/// ```
pub fn baggage() -> Baggage {
    Propagated::current().baggage().clone()
}

/// Runs `f` with `baggage` as the current baggage (replacing it; build on [`baggage()`] to add
/// to it), the trace flags and `tracestate` unchanged. For futures:
/// `Propagated::current().with_baggage(b).scope(future)`.
pub fn with_baggage<T>(baggage: Baggage, f: impl FnOnce() -> T) -> T {
    Propagated::current().with_baggage(baggage).in_scope(f)
}

/// The `tracestate` of the current trace (the trace of [`Context::current`](crate::Context::current)): the incoming
/// request's inside a handler behind notify-http's server layer, empty when there is none.
pub fn trace_state() -> TraceState {
    let Some(trace) = TraceId::new(crate::ids::current().trace) else {
        return TraceState::new();
    };
    Propagated::current().state_for(trace).cloned().unwrap_or_default()
}

/// What an event of `trace` finishing on this thread carries ([`Event::trace_state`],
/// [`Event::baggage`]): the current `tracestate` when it is of that trace (else empty), and the
/// current baggage whatever the trace (it belongs to the request). One thread-local access; a
/// reference-count increment for each that is not empty, no allocation.
///
/// [`Event::trace_state`]: crate::Event::trace_state
/// [`Event::baggage`]: crate::Event::baggage
#[inline]
pub(crate) fn captured_by_event(trace: TraceId) -> (TraceState, Baggage) {
    CURRENT
        .try_with(|current| {
            let fields = current.take();
            let captured = match fields.as_deref() {
                Some(f) => {
                    let state = if f.trace == trace.get() {
                        f.state.clone()
                    } else {
                        TraceState::new()
                    };
                    (state, f.baggage.clone())
                }
                None => (TraceState::new(), Baggage::new()),
            };
            current.set(fields);
            captured
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i45_1_enter_moves_the_record_in_and_back_and_nests() {
        let trace = TraceId::new(7).unwrap();
        let mut outer = Propagated::for_trace(trace, TraceFlags::RANDOM, "a=1".parse().unwrap());
        {
            let _entered = outer.enter();
            assert_eq!(Propagated::current().trace_id(), Some(trace));
            let inner = Propagated::current().with_baggage(Baggage::new().with("k", "v").unwrap());
            inner.in_scope(|| {
                assert_eq!(baggage().get("k"), Some("v"));
                assert_eq!(Propagated::current().trace_flags(), TraceFlags::RANDOM);
            });
            assert!(baggage().is_empty());
        }
        assert!(Propagated::current().is_empty());
        assert_eq!(outer.trace_state().as_str(), "a=1", "moved back");
        assert_eq!(outer.flags_for(trace), TraceFlags::RANDOM);
        assert_eq!(outer.flags_for(TraceId::new(8).unwrap()), TraceFlags::NONE);
        assert!(outer.state_for(TraceId::new(8).unwrap()).is_none());
    }
}
