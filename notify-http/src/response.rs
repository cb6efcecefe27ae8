//! The future and body shared by the server and client layers: the event stays current while
//! they are polled and ends when the response body ends.

use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use http::{HeaderMap, Response};
use http_body::{Body, Frame, SizeHint};
use notify_core::event::{EventId, Outcome};
use notify_core::{context, payload::EXCEPTION_KEY, Context, Handle, Value};
use pin_project_lite::pin_project;

use crate::classify::{Classification, Classify};
use crate::headers::HeaderRecording;
use crate::keys;

/// One listened request or call in flight: its started handle and what the end needs.
pub(crate) struct InFlight<C> {
    pub(crate) handle: Handle,
    pub(crate) classifier: C,
    /// Headers to record, if asked.
    headers: Option<std::sync::Arc<HeaderRecording>>,
    /// Data bytes of the response body so far.
    bytes: u64,
    /// The classifier deferred to the end of the body.
    at_end_of_stream: bool,
    /// The body's trailers were classified.
    trailers_seen: bool,
    /// What the request or call propagates (its trace's flags and `tracestate`, its baggage):
    /// the flags of a listened request's `traceresponse`, and made current when the event ends
    /// cancelled (the future or body is then dropped outside its scope, and the event keeps
    /// them as when it completes: exporters send them on from the event).
    propagated: context::Propagated,
}

impl<C: Classify> InFlight<C> {
    pub(crate) fn new(
        handle: Handle,
        classifier: C,
        headers: Option<std::sync::Arc<HeaderRecording>>,
        propagated: context::Propagated,
    ) -> Self {
        InFlight {
            handle,
            classifier,
            headers,
            bytes: 0,
            at_end_of_stream: false,
            trailers_seen: false,
            propagated,
        }
    }

    fn apply(&mut self, class: Classification) {
        match class {
            Classification::Success => {}
            Classification::Failure { kind, message } => {
                self.handle.payload_mut().insert(
                    EXCEPTION_KEY,
                    Value::Exception {
                        type_name: kind.into(),
                        message,
                    },
                );
            }
            Classification::AtEndOfStream => self.at_end_of_stream = true,
        }
    }

    fn on_response(&mut self, status: http::StatusCode, headers: &HeaderMap) {
        let payload = self.handle.payload_mut();
        payload.insert(keys::STATUS_CODE, u64::from(status.as_u16()));
        if let Some(recording) = &self.headers {
            recording.record_response(headers, payload);
        }
        let class = self.classifier.classify_response(status, headers);
        self.apply(class);
    }

    fn on_trailers(&mut self, trailers: &HeaderMap) {
        if self.at_end_of_stream && !self.trailers_seen {
            self.trailers_seen = true;
            let class = self.classifier.classify_end_of_stream(Some(trailers));
            self.at_end_of_stream = false;
            self.apply(class);
        }
    }

    /// Finishes the event as `outcome`; cancelled (dropped, outside the request's scope), with
    /// the request's `tracestate` and baggage current.
    fn finish(&mut self, outcome: Outcome) {
        if outcome == Outcome::Cancelled {
            let propagated = std::mem::take(&mut self.propagated);
            return propagated.in_scope(|| self.finish_now(outcome));
        }
        self.finish_now(outcome);
    }

    fn finish_now(&mut self, outcome: Outcome) {
        if outcome == Outcome::Completed && self.at_end_of_stream {
            let class = self.classifier.classify_end_of_stream(None);
            self.at_end_of_stream = false;
            self.apply(class);
        }
        let bytes = self.bytes;
        self.handle.payload_mut().insert(keys::BODY_SIZE, bytes);
        self.handle.set_outcome(outcome);
        // Started by the layer and finished once (the box is consumed): cannot fail.
        let _ = self.handle.finish();
    }

    fn record_error(&mut self, error: &dyn fmt::Display) {
        self.handle.payload_mut().insert(
            EXCEPTION_KEY,
            Value::Exception {
                type_name: "http.error".into(),
                message: error.to_string(),
            },
        );
    }
}

/// What a served request makes current besides its event, whether or not anyone listens: the
/// incoming (or new) trace when there is no event, and the request's trace flags, `tracestate`
/// and baggage ([`Propagated`](notify_core::context::Propagated)), entered around each poll.
/// Inactive for client calls (nothing to enter).
#[derive(Default)]
pub(crate) struct Scope {
    entered: context::Scope,
    active: bool,
    /// Set Level 2's `traceresponse` on the response head ([`ServerLayer::traceresponse`]);
    /// the value is made when the head is ready, from the scope's context or the event's.
    ///
    /// [`ServerLayer::traceresponse`]: crate::ServerLayer::traceresponse
    traceresponse: bool,
}

impl Scope {
    /// A served request's scope, entered at each poll; `traceresponse`: the response gets one.
    pub(crate) fn new(entered: context::Scope, traceresponse: bool) -> Scope {
        Scope {
            entered,
            active: true,
            traceresponse,
        }
    }

    /// Puts the `traceresponse` header of a request nobody records on its response head, when
    /// asked for (once: the flag is cleared): the scope's trace, and a fresh span id standing
    /// for the request's non-recording span.
    #[inline]
    fn insert_traceresponse(&mut self, headers: &mut HeaderMap) {
        if std::mem::take(&mut self.traceresponse) {
            self.insert_unrecorded_traceresponse(headers);
        }
    }

    #[cold]
    #[inline(never)]
    fn insert_unrecorded_traceresponse(&self, headers: &mut HeaderMap) {
        if let Some(context) = self.entered.context() {
            let span = notify_core::trace_context::new_span_id();
            insert_traceresponse(headers, &context, span, self.entered.propagated());
        }
    }

    /// Runs `f` with the scope entered when active (else just `f`).
    #[inline]
    fn run<T>(&mut self, f: impl FnOnce() -> T) -> T {
        if !self.active {
            return f();
        }
        let _entered = self.entered.enter();
        f()
    }
}

/// Holds the event while the future or body runs; dropped with the event still in flight (the
/// client went away, the caller dropped the call), it finishes it as [`Outcome::Cancelled`].
///
/// The box is in a `ManuallyDrop` because the guard's own `Drop` always takes it (finishing the
/// event): the field then needs no drop glue of its own, which an unlistened request's future
/// and body would otherwise call out of line each, for a `None`.
pub(crate) struct Guard<C: Classify>(pub(crate) ManuallyDrop<Option<Box<InFlight<C>>>>);

impl<C: Classify> Guard<C> {
    /// A guard of `in_flight` (`None`: nothing to finish).
    #[inline]
    pub(crate) fn new(in_flight: Option<Box<InFlight<C>>>) -> Guard<C> {
        Guard(ManuallyDrop::new(in_flight))
    }

    #[inline]
    fn finish(&mut self, outcome: Outcome) {
        if self.0.is_some() {
            self.finish_listened(outcome);
        }
    }

    #[cold]
    #[inline(never)]
    fn finish_listened(&mut self, outcome: Outcome) {
        if let Some(mut in_flight) = self.0.take() {
            in_flight.finish(outcome);
        }
    }
}

impl<C: Classify> Drop for Guard<C> {
    #[inline]
    fn drop(&mut self) {
        self.finish(Outcome::Cancelled);
    }
}

/// Runs `poll` with the event of `guard` current; a panic finishes the event as
/// [`Outcome::Panicked`] and goes on.
#[inline]
fn poll_entered<C: Classify, T>(guard: &mut Guard<C>, poll: impl FnOnce() -> T) -> T {
    let Some(in_flight) = guard.0.as_deref() else {
        return poll();
    };
    let result = {
        let _entered = in_flight.handle.enter();
        catch_unwind(AssertUnwindSafe(poll))
    };
    match result {
        Ok(value) => value,
        Err(panic) => {
            guard.finish(Outcome::Panicked);
            resume_unwind(panic)
        }
    }
}

pin_project! {
    /// The response future of [`ServerService`](crate::ServerService) and
    /// [`ClientService`](crate::ClientService): the inner service's future, polled with the
    /// request's event current. Its response's body is a [`ResponseBody`], which ends the event.
    /// Dropped before it completes, the event ends as [`Outcome::Cancelled`]; a panic while it is
    /// polled ends it as [`Outcome::Panicked`] (and the panic goes on).
    pub struct ResponseFuture<F, C: Classify> {
        #[pin]
        inner: F,
        guard: Guard<C>,
        scope: Scope,
    }
}

impl<F, C: Classify> ResponseFuture<F, C> {
    pub(crate) fn new(inner: F, in_flight: Option<Box<InFlight<C>>>) -> Self {
        ResponseFuture {
            inner,
            guard: Guard::new(in_flight),
            scope: Scope::default(),
        }
    }

    /// The future of a served request, with its scope.
    #[inline]
    pub(crate) fn scoped(inner: F, in_flight: Option<Box<InFlight<C>>>, scope: Scope) -> Self {
        ResponseFuture {
            inner,
            guard: Guard::new(in_flight),
            scope,
        }
    }
}

impl<F, B, E, C> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body,
    E: fmt::Display,
    C: Classify,
{
    type Output = Result<Response<ResponseBody<B, C>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.guard.0.is_none() && this.scope.active {
            return poll_response_unrecorded(this.inner, this.scope, cx);
        }
        if this.guard.0.is_none() {
            return match this.inner.poll(cx) {
                Poll::Ready(Ok(response)) => Poll::Ready(Ok(response.map(|body| ResponseBody {
                    inner: body,
                    guard: Guard::new(None),
                    scope: Scope::default(),
                }))),
                Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                Poll::Pending => Poll::Pending,
            };
        }
        poll_response_scoped(this.inner, this.guard, this.scope, cx)
    }
}

/// [`ResponseFuture::poll`] for a served request nobody records: polled in its scope, which
/// then moves into the body.
#[inline]
fn poll_response_unrecorded<F, B, E, C>(
    inner: Pin<&mut F>,
    scope: &mut Scope,
    cx: &mut TaskContext<'_>,
) -> Poll<Result<Response<ResponseBody<B, C>>, E>>
where
    F: Future<Output = Result<Response<B>, E>>,
    C: Classify,
{
    match scope.run(|| inner.poll(cx)) {
        Poll::Ready(Ok(response)) => {
            // The header goes on the head alone: a borrow of the whole response passed to a call
            // not inlined (`HeaderMap::insert`) would make every later move of it a `memcpy`
            // (the response is larger than the compiler moves inline), also without the header.
            let (mut head, body) = response.into_parts();
            scope.insert_traceresponse(&mut head.headers);
            let body = ResponseBody {
                inner: body,
                guard: Guard::new(None),
                scope: std::mem::take(scope),
            };
            Poll::Ready(Ok(Response::from_parts(head, body)))
        }
        Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
        Poll::Pending => Poll::Pending,
    }
}

/// Puts the `traceresponse` header on a response head: `context`'s trace, `span` (the request's
/// event, or the id standing for its non-recording span), the flags of the trace (`propagated`:
/// the request's record).
fn insert_traceresponse(headers: &mut HeaderMap, context: &Context, span: EventId, propagated: &context::Propagated) {
    if let Some(value) = crate::propagation::traceresponse(context, span, propagated) {
        headers.insert(notify_core::trace_context::TRACERESPONSE, value);
    }
}

/// [`ResponseFuture::poll`] for a listened request.
#[inline(never)]
fn poll_response_scoped<F, B, E, C>(
    inner: Pin<&mut F>,
    guard: &mut Guard<C>,
    scope: &mut Scope,
    cx: &mut TaskContext<'_>,
) -> Poll<Result<Response<ResponseBody<B, C>>, E>>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body,
    E: fmt::Display,
    C: Classify,
{
    // Read here, cleared when the head is ready (the closure below holds the scope).
    let traceresponse = scope.traceresponse;
    // The whole step runs in the scope: an event that ends here (an empty body, an error)
    // finishes with the request's trace state current.
    let step = scope.run(|| {
        let poll = poll_entered(guard, || inner.poll(cx));
        match poll {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(mut response)) => {
                if let (true, Some(in_flight)) = (traceresponse, guard.0.as_deref()) {
                    let event = in_flight.handle.in_scope(Context::current);
                    if let Some(id) = event.event_id() {
                        insert_traceresponse(response.headers_mut(), &event, id, &in_flight.propagated);
                    }
                }
                let mut in_flight = guard.0.take();
                if let Some(in_flight) = in_flight.as_deref_mut() {
                    in_flight.on_response(response.status(), response.headers());
                }
                let (parts, body) = response.into_parts();
                let mut guard = Guard::new(in_flight);
                if body.is_end_stream() {
                    // An empty body may never be polled: the event ends with the head.
                    guard.finish(Outcome::Completed);
                }
                Poll::Ready(Ok((parts, body, guard)))
            }
            Poll::Ready(Err(error)) => {
                if let Some(mut in_flight) = guard.0.take() {
                    in_flight.record_error(&error);
                    in_flight.finish(Outcome::Completed);
                }
                Poll::Ready(Err(error))
            }
        }
    });
    step.map_ok(|(parts, body, guard)| {
        scope.traceresponse = false;
        let scope = std::mem::take(scope);
        Response::from_parts(
            parts,
            ResponseBody {
                inner: body,
                guard,
                scope,
            },
        )
    })
}

impl<F, C: Classify> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("listened", &self.guard.0.is_some())
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// The response body of [`ServerService`](crate::ServerService) and
    /// [`ClientService`](crate::ClientService): the inner body, its data bytes counted
    /// (`http.response.body.size`), polled with the request's event current. The event ends
    /// when the body ends (its last frame, or an error); dropped before that (the client went
    /// away), it ends as [`Outcome::Cancelled`]; a panic while polled ends it as
    /// [`Outcome::Panicked`].
    pub struct ResponseBody<B, C: Classify> {
        #[pin]
        inner: B,
        guard: Guard<C>,
        scope: Scope,
    }
}

impl<B, C> Body for ResponseBody<B, C>
where
    B: Body,
    B::Error: fmt::Display,
    C: Classify,
{
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        if this.guard.0.is_some() {
            return poll_frame_scoped(this.inner, this.guard, this.scope, cx);
        }
        // Unlistened, a body that said it has ended does no more work when polled (its
        // `poll_frame` returns `None`): nothing to make current for it.
        if !this.scope.active || this.inner.is_end_stream() {
            return this.inner.poll_frame(cx);
        }
        let inner = this.inner;
        this.scope.run(|| inner.poll_frame(cx))
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What polling a body for a frame gives.
type FramePoll<B> = Poll<Option<Result<Frame<<B as Body>::Data>, <B as Body>::Error>>>;

/// [`ResponseBody::poll_frame`] for a listened request.
#[inline(never)]
fn poll_frame_scoped<B, C>(
    mut inner: Pin<&mut B>,
    guard: &mut Guard<C>,
    scope: &mut Scope,
    cx: &mut TaskContext<'_>,
) -> FramePoll<B>
where
    B: Body,
    B::Error: fmt::Display,
    C: Classify,
{
    // The whole step runs in the scope: the event that ends here finishes with the request's
    // trace state current.
    scope.run(|| {
        let poll = poll_entered(guard, || inner.as_mut().poll_frame(cx));
        match &poll {
            Poll::Pending => {}
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(in_flight) = guard.0.as_deref_mut() {
                    if let Some(data) = frame.data_ref() {
                        in_flight.bytes += bytes::Buf::remaining(data) as u64;
                    } else if let Some(trailers) = frame.trailers_ref() {
                        in_flight.on_trailers(trailers);
                    }
                }
                if inner.is_end_stream() {
                    guard.finish(Outcome::Completed);
                }
            }
            Poll::Ready(Some(Err(error))) => {
                if let Some(mut in_flight) = guard.0.take() {
                    in_flight.record_error(error);
                    in_flight.finish(Outcome::Completed);
                }
            }
            Poll::Ready(None) => guard.finish(Outcome::Completed),
        }
        poll
    })
}

impl<B: Default, C: Classify> Default for ResponseBody<B, C> {
    fn default() -> Self {
        ResponseBody {
            inner: B::default(),
            guard: Guard::new(None),
            scope: Scope::default(),
        }
    }
}

impl<B, C: Classify> fmt::Debug for ResponseBody<B, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBody")
            .field("listened", &self.guard.0.is_some())
            .finish_non_exhaustive()
    }
}
