//! The server layer: one event per request served.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use notify_core::{event::Callsite, Notifier, Payload};
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::{Classify, ServerErrorsAsFailures};
use crate::headers::{HeaderRecording, Headers};
use crate::keys;
use crate::response::{InFlight, ResponseBody, ResponseFuture};
use crate::source::Source;

/// The server layer's default event name.
pub const SERVER_EVENT: &str = "request.http";

static SERVER_SITE: Callsite = Callsite::new(SERVER_EVENT);

type RouteFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

/// A [`Layer`] that makes one event per request served (default name `"request.http"`, on the
/// global notifier). See the [crate documentation](crate) for the payload and the rules.
///
/// Cloning it, and cloning the services it makes, copies a few words (no reference count is
/// touched unless a route function, headers, another name or another notifier was configured).
pub struct ServerLayer<C = ServerErrorsAsFailures> {
    source: Source,
    classifier: C,
    route: Option<Arc<RouteFn>>,
    headers: Option<Arc<HeaderRecording>>,
    continue_trace: bool,
}

impl ServerLayer {
    /// A layer for events `"request.http"` on the global notifier, 5xx responses as failures.
    pub fn new() -> ServerLayer {
        ServerLayer {
            source: Source::Site(&SERVER_SITE),
            classifier: ServerErrorsAsFailures,
            route: None,
            headers: None,
            continue_trace: true,
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
            route: self.route,
            headers: self.headers,
            continue_trace: self.continue_trace,
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
        self.route = Some(Arc::new(f));
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
        Arc::make_mut(self.headers.get_or_insert_with(Default::default))
    }

    /// Whether a request with a valid W3C `traceparent` header continues that trace (its event a
    /// child of the remote parent); on by default. Turn it off at a trust boundary: every request
    /// then starts a new trace.
    pub fn continue_trace(mut self, yes: bool) -> Self {
        self.continue_trace = yes;
        self
    }
}

impl<C: Clone> Clone for ServerLayer<C> {
    fn clone(&self) -> Self {
        ServerLayer {
            source: self.source.clone(),
            classifier: self.classifier.clone(),
            route: self.route.clone(),
            headers: self.headers.clone(),
            continue_trace: self.continue_trace,
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for ServerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerLayer")
            .field("name", &self.source.name())
            .field("classifier", &self.classifier)
            .field("route_from", &self.route.is_some())
            .field("headers", &self.headers)
            .field("continue_trace", &self.continue_trace)
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

fn request_payload<C>(layer: &ServerLayer<C>, parts: &Parts) -> Payload {
    let mut payload = Payload::new()
        .with(keys::KIND, "server")
        .with(keys::METHOD, keys::method(&parts.method))
        .with(keys::PATH, parts.uri.path().to_owned());
    if let Some(route) = layer.route.as_ref().and_then(|route| route(parts)) {
        payload.insert(keys::ROUTE, route);
    }
    if let Some(headers) = &layer.headers {
        headers.record_request(&parts.headers, &mut payload);
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
        if !self.layer.source.enabled() {
            return ResponseFuture::new(self.inner.call(request), None);
        }
        self.call_listened(request)
    }
}

impl<S, C: Classify> ServerService<S, C> {
    #[inline(never)]
    fn call_listened<ReqBody>(&mut self, request: Request<ReqBody>) -> ResponseFuture<S::Future, C>
    where
        S: Service<Request<ReqBody>>,
    {
        let (parts, body) = request.into_parts();
        let handle = self.layer.source.handle(|| request_payload(&self.layer, &parts));
        let Some(mut handle) = handle else {
            return ResponseFuture::new(self.inner.call(Request::from_parts(parts, body)), None);
        };
        if self.layer.continue_trace {
            if let Some(parent) = crate::propagation::extract(&parts.headers) {
                // A fresh handle: setting its parent cannot fail.
                let _ = handle.set_parent(parent);
            }
        }
        // Not started yet: cannot fail.
        let _ = handle.start();
        let request = Request::from_parts(parts, body);
        if !handle.is_listened() {
            return ResponseFuture::new(self.inner.call(request), None);
        }
        // The handler's synchronous part runs with the event current too.
        let future = {
            let _entered = handle.enter();
            self.inner.call(request)
        };
        let in_flight = InFlight::new(handle, self.layer.classifier.clone(), self.layer.headers.clone());
        ResponseFuture::new(future, Some(Box::new(in_flight)))
    }
}
