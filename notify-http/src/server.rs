//! The server layer: one event per request served.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use notify_core::context::{self, Propagated};
use notify_core::{event::Callsite, Context, Notifier, Payload};
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::{Classify, ServerErrorsAsFailures};
use crate::headers::{HeaderRecording, Headers};
use crate::keys;
use crate::propagation;
use crate::response::{InFlight, ResponseBody, ResponseFuture, Scope};
use crate::source::Source;

/// The server layer's default event name.
pub const SERVER_EVENT: &str = "request.http";

static SERVER_SITE: Callsite = Callsite::new(SERVER_EVENT);

type RouteFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

/// A [`Layer`] that makes one event per request served (default name `"request.http"`, on the
/// global notifier). See the [crate documentation](crate) for the payload and the rules.
///
/// Cloning it, and cloning the services it makes, copies a few words (no reference count is
/// touched unless a route function, headers, baggage keys, another name or another notifier was
/// configured).
pub struct ServerLayer<C = ServerErrorsAsFailures> {
    source: Source,
    classifier: C,
    /// What a listened request records beyond the default payload; `None`: nothing more. Behind
    /// one pointer: the service is cloned, moved and dropped per request whoever listens.
    recording: Option<Arc<Recording>>,
    continue_trace: bool,
    traceresponse: bool,
}

/// The optional parts of a listened request's payload ([`ServerLayer::route_from`],
/// [`ServerLayer::request_headers`] and the like, [`ServerLayer::record_baggage`]).
#[derive(Clone, Default)]
struct Recording {
    route: Option<Arc<RouteFn>>,
    headers: Option<Arc<HeaderRecording>>,
    /// Baggage keys recorded in the payload (`baggage.<key>`).
    baggage_keys: Option<Arc<[String]>>,
}

/// What a layer without optional recording records: nothing more.
static NO_RECORDING: Recording = Recording {
    route: None,
    headers: None,
    baggage_keys: None,
};

impl<C> ServerLayer<C> {
    fn recording(&self) -> &Recording {
        self.recording.as_deref().unwrap_or(&NO_RECORDING)
    }
}

impl ServerLayer {
    /// A layer for events `"request.http"` on the global notifier, 5xx responses as failures.
    pub fn new() -> ServerLayer {
        ServerLayer {
            source: Source::Site(&SERVER_SITE),
            classifier: ServerErrorsAsFailures,
            recording: None,
            continue_trace: true,
            traceresponse: false,
        }
    }
}

impl Default for ServerLayer {
    fn default() -> Self {
        ServerLayer::new()
    }
}

impl<C: Classify> ServerLayer<C> {
    /// Names the events `name` instead of `"request.http"` (AS::N's `"<method>.<namespace>"`
    /// form is advised). Unlistened, a named event costs a name lookup per request
    /// instead of the default name's one atomic load.
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

    /// Decides failures with `classifier` (default [`ServerErrorsAsFailures`]; gRPC services use
    /// [`GrpcErrorsAsFailures`](crate::classify::GrpcErrorsAsFailures)).
    pub fn classifier<C2: Classify>(self, classifier: C2) -> ServerLayer<C2> {
        ServerLayer {
            source: self.source,
            classifier,
            recording: self.recording,
            continue_trace: self.continue_trace,
            traceresponse: self.traceresponse,
        }
    }

    /// Finds the route template of a request (`http.route`, e.g. `"/books/{id}"`), which the
    /// framework knows and notify-http does not: `f` gets the request's head before the inner
    /// service runs and returns the template, or `None`. With axum, where the layer is added with
    /// `Router::layer` (inside the router, after routing), the template is the `MatchedPath`
    /// extension:
    ///
    /// ```ignore
    /// ServerLayer::new().route_from(|parts| parts.extensions.get::<axum::extract::MatchedPath>().map(|p| p.as_str().to_owned()))
    /// ```
    ///
    /// Without it, or when it returns `None`, only `url.path` is recorded.
    pub fn route_from(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        self.recording_mut().route = Some(Arc::new(f));
        self
    }

    /// Records these request headers in the payload (`http.request.header.<name>`); none by default.
    /// Sensitive headers ([`ServerLayer::sensitive_headers`]) are recorded as
    /// [`REDACTED`](crate::REDACTED), and the notifier's redaction policy applies to the rest.
    pub fn request_headers(mut self, which: Headers) -> Self {
        self.headers_mut().request = Some(which);
        self
    }

    /// Records these response headers in the payload (`http.response.header.<name>`); none by
    /// default. Sensitive ones as for [`ServerLayer::request_headers`].
    pub fn response_headers(mut self, which: Headers) -> Self {
        self.headers_mut().response = Some(which);
        self
    }

    /// The headers whose values are never recorded, replacing the default list
    /// ([`default_sensitive_headers`](crate::default_sensitive_headers): `authorization`,
    /// `proxy-authorization`, `cookie`, `set-cookie`).
    pub fn sensitive_headers(mut self, names: impl IntoIterator<Item = http::HeaderName>) -> Self {
        self.headers_mut().sensitive = names.into_iter().collect();
        self
    }

    fn headers_mut(&mut self) -> &mut HeaderRecording {
        Arc::make_mut(self.recording_mut().headers.get_or_insert_with(Default::default))
    }

    fn recording_mut(&mut self) -> &mut Recording {
        Arc::make_mut(self.recording.get_or_insert_with(Default::default))
    }

    /// Whether a request with a valid W3C `traceparent` header continues that trace (its event a
    /// child of the remote parent, its `tracestate` and `baggage` passed on to the calls the
    /// handler makes); on by default. Turn it off at a trust boundary: every request then starts
    /// a new trace, and its `tracestate` and `baggage` headers are ignored (the specification's
    /// "restart trace" mutation).
    pub fn continue_trace(mut self, yes: bool) -> Self {
        self.continue_trace = yes;
        self
    }

    /// Whether responses carry Level 2's `traceresponse` header (off by default):
    /// `00-{trace id}-{span id}-{flags}`, the request's trace (the caller's, or the one this
    /// service started), the request's event id (or, when nobody records the request, a fresh
    /// id standing for its non-recording span) and its sampled and random flags. It tells a
    /// client the trace id to quote in a bug report; it also tells any caller the trace ids this
    /// service uses, so leave it off where that matters.
    pub fn traceresponse(mut self, yes: bool) -> Self {
        self.traceresponse = yes;
        self
    }

    /// Records the values of these W3C baggage keys in the request's payload
    /// (`baggage.<key>`, when the request's baggage has the key); none by default: baggage is
    /// user data and is never recorded otherwise. The notifier's redaction policy applies to
    /// these entries as to the whole payload, by their recorded key: `key("baggage.user")`
    /// redacts baggage `user`, `key("user")` does not (unlike headers, whose name alone matches).
    pub fn record_baggage(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        self.recording_mut().baggage_keys = (!keys.is_empty()).then(|| keys.into());
        self
    }
}

impl<C: Clone> Clone for ServerLayer<C> {
    fn clone(&self) -> Self {
        ServerLayer {
            source: self.source.clone(),
            classifier: self.classifier.clone(),
            recording: self.recording.clone(),
            continue_trace: self.continue_trace,
            traceresponse: self.traceresponse,
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for ServerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerLayer")
            .field("name", &self.source.name())
            .field("classifier", &self.classifier)
            .field("route_from", &self.recording().route.is_some())
            .field("headers", &self.recording().headers)
            .field("continue_trace", &self.continue_trace)
            .field("traceresponse", &self.traceresponse)
            .field("record_baggage", &self.recording().baggage_keys)
            .finish()
    }
}

impl<S, C: Classify> Layer<S> for ServerLayer<C> {
    type Service = ServerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        ServerService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`ServerLayer`]: the inner service, each request an event.
pub struct ServerService<S, C = ServerErrorsAsFailures> {
    inner: S,
    layer: ServerLayer<C>,
}

impl<S: Clone, C: Clone> Clone for ServerService<S, C> {
    fn clone(&self) -> Self {
        ServerService {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: fmt::Debug, C: fmt::Debug> fmt::Debug for ServerService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerService")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}

impl<S, C> ServerService<S, C> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

fn request_payload<C>(layer: &ServerLayer<C>, parts: &Parts, propagated: &Propagated) -> Payload {
    let mut payload = Payload::new()
        .with(keys::KIND, "server")
        .with(keys::METHOD, keys::method(&parts.method))
        .with(keys::PATH, parts.uri.path().to_owned());
    let recording = layer.recording();
    if let Some(route) = recording.route.as_ref().and_then(|route| route(parts)) {
        payload.insert(keys::ROUTE, route);
    }
    if let Some(headers) = &recording.headers {
        headers.record_request(&parts.headers, &mut payload);
    }
    if let Some(keys) = &recording.baggage_keys {
        for key in keys.iter() {
            if let Some(value) = propagated.baggage().get(key) {
                payload.insert(format!("{}{key}", keys::BAGGAGE_PREFIX), value.to_owned());
            }
        }
    }
    payload
}

impl<S, C, ReqBody, ResBody> Service<Request<ReqBody>> for ServerService<S, C>
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

    #[inline]
    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // Always: passing the caller's trace on does not depend on anybody listening.
        let (context, propagated) = propagation::incoming(request.headers(), self.layer.continue_trace);
        if self.layer.source.enabled() {
            let context = context.unwrap_or_else(Context::new_trace);
            return self.call_listened(request, context, propagated);
        }
        let mut scope = match context {
            Some(context) => context::Scope::new(Some(context), propagated),
            None => context::Scope::new_trace(propagated),
        };
        // `call_unrecorded`'s body written out: passed through that call, inlined or not, the
        // request was copied once more (a `memcpy` of the whole request, counted with callgrind
        // in docs/benchmarks.md).
        let future = {
            let _entered = scope.enter();
            self.inner.call(request)
        };
        ResponseFuture::scoped(future, None, Scope::new(scope, self.layer.traceresponse))
    }
}

impl<S, C: Classify> ServerService<S, C> {
    /// A request nobody records: the handler runs in the incoming (or new) trace, through a
    /// non-recording span (the trace's context itself, no event of ours), in `scope`.
    #[inline]
    fn call_unrecorded<ReqBody>(
        &mut self,
        request: Request<ReqBody>,
        mut scope: context::Scope,
    ) -> ResponseFuture<S::Future, C>
    where
        S: Service<Request<ReqBody>>,
    {
        // The handler's synchronous part runs in the request's scope too.
        let future = {
            let _entered = scope.enter();
            self.inner.call(request)
        };
        ResponseFuture::scoped(future, None, Scope::new(scope, self.layer.traceresponse))
    }

    #[inline(never)]
    fn call_listened<ReqBody>(
        &mut self,
        request: Request<ReqBody>,
        context: Context,
        propagated: Propagated,
    ) -> ResponseFuture<S::Future, C>
    where
        S: Service<Request<ReqBody>>,
    {
        let (parts, body) = request.into_parts();
        let handle = self
            .layer
            .source
            .handle(|| request_payload(&self.layer, &parts, &propagated));
        let Some(mut handle) = handle else {
            return self.call_unrecorded(
                Request::from_parts(parts, body),
                context::Scope::new(Some(context), propagated),
            );
        };
        // A fresh handle: setting its parent cannot fail. A new trace has no parent event: the
        // request's event is its root.
        let _ = handle.set_parent(context);
        // Not started yet: cannot fail.
        let _ = handle.start();
        let request = Request::from_parts(parts, body);
        if !handle.is_listened() {
            return self.call_unrecorded(request, context::Scope::new(Some(context), propagated));
        }
        let propagated = propagation::for_events(&context, propagated);
        let mut scope = context::Scope::new(None, propagated.clone());
        // The handler's synchronous part runs with the event current too.
        let future = {
            let _entered = handle.enter();
            let _scope = scope.enter();
            self.inner.call(request)
        };
        let in_flight = InFlight::new(
            handle,
            self.layer.classifier.clone(),
            self.layer.recording().headers.clone(),
            propagated,
        );
        ResponseFuture::scoped(
            future,
            Some(Box::new(in_flight)),
            Scope::new(scope, self.layer.traceresponse),
        )
    }
}
