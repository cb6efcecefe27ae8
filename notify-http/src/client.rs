//! The client layer: one event per call made, a child of the current event.

use std::borrow::Cow;
use std::fmt;
use std::task::{Context as TaskContext, Poll};

use http::{Request, Response};
use http_body::Body;
use notify_core::{event::Callsite, Notifier, Payload};
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::{Classify, StatusInRangeAsFailures};
use crate::keys;
use crate::response::{InFlight, ResponseBody, ResponseFuture};
use crate::source::Source;

/// The client layer's default event name.
pub const CLIENT_EVENT: &str = "request.http_client";

static CLIENT_SITE: Callsite = Callsite::new(CLIENT_EVENT);

/// A [`Layer`] for any tower HTTP client (hyper-util's `Client`, a `tower::ServiceBuilder`
/// stack, ...): each call is an event (default name `"request.http_client"`, on the global
/// notifier), a child of the event current where the call is made, and the request carries the
/// W3C `traceparent` of that event, so the server it reaches continues the trace. The event ends
/// when the response body ends (or the call fails, or is dropped: cancelled).
///
/// **Propagation does not depend on listening.** Every call carries `traceparent`, `tracestate`
/// and `baggage`: with an event, its id is the parent id; without one (nobody listens to calls),
/// a fresh random parent id for this call (a non-recording span, as OpenTelemetry's SDK makes
/// when its sampler drops a span) in the current trace, or in a new trace when there is none.
/// The trace flags (sampled, Level 2's random), the `tracestate` of the current trace and the
/// baggage of the current scope ([`notify_core::context::baggage()`]) go along. Headers of these
/// names set by the caller are replaced, and removed when the scope has none to send (set
/// baggage through the scope, [`notify_core::context::with_baggage`], not on the request).
///
/// Payload: `otel.kind` = `"client"`, `http.request.method`, `server.address`, `server.port` (when
/// the URI names one), `url.path`, then `http.response.status_code` and `http.response.body.size`;
/// a failed call or a failing status (default: 400-599) as the `exception` entry.
pub struct ClientLayer<C = StatusInRangeAsFailures> {
    source: Source,
    classifier: C,
    /// The vendor key of this service's own `tracestate` entry, if it writes one.
    tracestate_key: Option<std::sync::Arc<str>>,
}

impl ClientLayer {
    /// A layer for events `"request.http_client"` on the global notifier, statuses 400-599 as
    /// failures.
    pub fn new() -> ClientLayer {
        ClientLayer {
            source: Source::Site(&CLIENT_SITE),
            classifier: StatusInRangeAsFailures::new(400..=599),
            tracestate_key: None,
        }
    }
}

impl Default for ClientLayer {
    fn default() -> Self {
        ClientLayer::new()
    }
}

impl<C: Classify> ClientLayer<C> {
    /// Names the events `name` instead of `"request.http_client"`.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.source = self.source.with_name(name.into());
        self
    }

    /// Publishes on `notifier` instead of the global one.
    pub fn notifier(mut self, notifier: &Notifier) -> Self {
        self.source = self.source.with_notifier(notifier.clone());
        self
    }

    /// The event name.
    pub fn event_name(&self) -> &str {
        self.source.name()
    }

    /// Decides failures with `classifier` (default [`StatusInRangeAsFailures`] over 400-599).
    pub fn classifier<C2: Classify>(self, classifier: C2) -> ClientLayer<C2> {
        ClientLayer {
            source: self.source,
            classifier,
            tracestate_key: self.tracestate_key,
        }
    }

    /// Writes this service's own `tracestate` entry on every call that is an event: `key` with
    /// the call's event id (16 hex digits) as value, moved to the front of the list as the
    /// specification asks of a vendor updating its entry. Calls nobody records pass the
    /// `tracestate` on unchanged. `key` follows the Level 2 key grammar (e.g. `"acme"` or the
    /// multi-tenant `"tenant@acme"`).
    ///
    /// # Panics
    ///
    /// When `key` is not a valid `tracestate` key (a programming error, found at startup).
    pub fn tracestate_entry(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        assert!(
            notify_core::trace_context::TraceState::new().with(&key, "0").is_ok(),
            "not a tracestate key: {key:?}"
        );
        self.tracestate_key = Some(key.into());
        self
    }
}

impl<C: Clone> Clone for ClientLayer<C> {
    fn clone(&self) -> Self {
        ClientLayer {
            source: self.source.clone(),
            classifier: self.classifier.clone(),
            tracestate_key: self.tracestate_key.clone(),
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for ClientLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLayer")
            .field("name", &self.source.name())
            .field("classifier", &self.classifier)
            .field("tracestate_entry", &self.tracestate_key)
            .finish()
    }
}

impl<S, C: Classify> Layer<S> for ClientLayer<C> {
    type Service = ClientService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`ClientLayer`]: the inner client, each call an event.
pub struct ClientService<S, C = StatusInRangeAsFailures> {
    inner: S,
    layer: ClientLayer<C>,
}

impl<S: Clone, C: Clone> Clone for ClientService<S, C> {
    fn clone(&self) -> Self {
        ClientService {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: fmt::Debug, C: fmt::Debug> fmt::Debug for ClientService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientService")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}

impl<S, C> ClientService<S, C> {
    /// The inner client.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

fn call_payload<B>(request: &Request<B>) -> Payload {
    let uri = request.uri();
    let mut payload = Payload::new()
        .with(keys::KIND, "client")
        .with(keys::METHOD, keys::method(request.method()));
    if let Some(host) = uri.host() {
        payload.insert(keys::SERVER_ADDRESS, host.to_owned());
    }
    if let Some(port) = uri.port_u16() {
        payload.insert(keys::SERVER_PORT, u64::from(port));
    }
    payload.insert(keys::PATH, uri.path().to_owned());
    payload
}

impl<S, C, ReqBody, ResBody> Service<Request<ReqBody>> for ClientService<S, C>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Error: fmt::Display,
    ResBody: Body,
    C: Classify,
{
    type Response = Response<ResponseBody<ResBody, C>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, C>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        let handle = if self.layer.source.enabled() {
            self.layer.source.handle(|| call_payload(&request))
        } else {
            None
        };
        let Some(mut handle) = handle else {
            // Nobody listens to the call: the server still continues the current trace.
            crate::propagation::inject_unrecorded(request.headers_mut());
            return ResponseFuture::new(self.inner.call(request), None);
        };
        // Not started yet: cannot fail. Its parent is the current event.
        let _ = handle.start();
        if !handle.is_listened() {
            crate::propagation::inject_unrecorded(request.headers_mut());
            return ResponseFuture::new(self.inner.call(request), None);
        }
        crate::propagation::inject_event(request.headers_mut(), &handle, self.layer.tracestate_key.as_deref());
        let future = {
            let _entered = handle.enter();
            self.inner.call(request)
        };
        let in_flight = InFlight::new(
            handle,
            self.layer.classifier.clone(),
            None,
            notify_core::context::Propagated::current(),
        );
        ResponseFuture::new(future, Some(Box::new(in_flight)))
    }
}
