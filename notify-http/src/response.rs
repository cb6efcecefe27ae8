//! The future and body shared by the server and client layers: the event stays current while
//! they are polled and ends when the response body ends.

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use http::{HeaderMap, HeaderValue, Response};
use http_body::{Body, Frame, SizeHint};
use notify_core::{context, event::Outcome, payload::EXCEPTION_KEY, Handle, Value};
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
}

impl<C: Classify> InFlight<C> {
    pub(crate) fn new(handle: Handle, classifier: C, headers: Option<std::sync::Arc<HeaderRecording>>) -> Self {
        InFlight {
            handle,
            classifier,
            headers,
            bytes: 0,
            at_end_of_stream: false,
            trailers_seen: false,
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

    /// Finishes the event as `outcome`.
    fn finish(&mut self, outcome: Outcome) {
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
}

impl Scope {
    /// A served request's scope, entered at each poll.
    pub(crate) fn new(entered: context::Scope) -> Scope {
        Scope { entered, active: true }
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
pub(crate) struct Guard<C: Classify>(pub(crate) Option<Box<InFlight<C>>>);

impl<C: Classify> Guard<C> {
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
        // Level 2's `traceresponse`, set on the response head (boxed: it is rare, and the
        // future is moved around).
        traceresponse: Option<Box<HeaderValue>>,
    }
}

impl<F, C: Classify> ResponseFuture<F, C> {
    pub(crate) fn new(inner: F, in_flight: Option<Box<InFlight<C>>>) -> Self {
        ResponseFuture {
            inner,
            guard: Guard(in_flight),
            scope: Scope::default(),
            traceresponse: None,
        }
    }

    /// The future of a served request, with its scope and `traceresponse`.
    #[inline]
    pub(crate) fn scoped(
        inner: F,
        in_flight: Option<Box<InFlight<C>>>,
        scope: Scope,
        traceresponse: Option<HeaderValue>,
    ) -> Self {
        ResponseFuture {
            inner,
            guard: Guard(in_flight),
            scope,
            traceresponse: traceresponse.map(Box::new),
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
            return poll_response_unrecorded(this.inner, this.scope, this.traceresponse, cx);
        }
        if this.guard.0.is_none() {
            return match this.inner.poll(cx) {
                Poll::Ready(Ok(response)) => Poll::Ready(Ok(response.map(|body| ResponseBody {
                    inner: body,
                    guard: Guard(None),
                    scope: Scope::default(),
                }))),
                Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                Poll::Pending => Poll::Pending,
            };
        }
        poll_response_scoped(this.inner, this.guard, this.scope, this.traceresponse, cx)
    }
}

/// [`ResponseFuture::poll`] for a served request nobody records: polled in its scope, which
/// then moves into the body.
#[inline]
fn poll_response_unrecorded<F, B, E, C>(
    inner: Pin<&mut F>,
    scope: &mut Scope,
    traceresponse: &mut Option<Box<HeaderValue>>,
    cx: &mut TaskContext<'_>,
) -> Poll<Result<Response<ResponseBody<B, C>>, E>>
where
    F: Future<Output = Result<Response<B>, E>>,
    C: Classify,
{
    match scope.run(|| inner.poll(cx)) {
        Poll::Ready(Ok(mut response)) => {
            insert_traceresponse(&mut response, traceresponse);
            let scope = std::mem::take(scope);
            Poll::Ready(Ok(response.map(|inner| ResponseBody {
                inner,
                guard: Guard(None),
                scope,
            })))
        }
        Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
        Poll::Pending => Poll::Pending,
    }
}

/// Puts the `traceresponse` header prepared at the request's start (if `ServerLayer` asked for
/// one) on the response, once.
#[inline]
fn insert_traceresponse<B>(response: &mut Response<B>, traceresponse: &mut Option<Box<HeaderValue>>) {
    if let Some(value) = traceresponse.take() {
        response
            .headers_mut()
            .insert(notify_core::trace_context::TRACERESPONSE, *value);
    }
}

/// [`ResponseFuture::poll`] for a listened request.
#[inline(never)]
fn poll_response_scoped<F, B, E, C>(
    inner: Pin<&mut F>,
    guard: &mut Guard<C>,
    scope: &mut Scope,
    traceresponse: &mut Option<Box<HeaderValue>>,
    cx: &mut TaskContext<'_>,
) -> Poll<Result<Response<ResponseBody<B, C>>, E>>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body,
    E: fmt::Display,
    C: Classify,
{
    // The whole step runs in the scope: an event that ends here (an empty body, an error)
    // finishes with the request's trace state current.
    let step = scope.run(|| {
        let poll = poll_entered(guard, || inner.poll(cx));
        match poll {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(mut response)) => {
                insert_traceresponse(&mut response, traceresponse);
                let mut in_flight = guard.0.take();
                if let Some(in_flight) = in_flight.as_deref_mut() {
                    in_flight.on_response(response.status(), response.headers());
                }
                let (parts, body) = response.into_parts();
                let mut guard = Guard(in_flight);
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
            guard: Guard(None),
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
