//! Per-request overhead of notify-http's server layer (issue 36), on an in-process tower service
//! (no network): a request goes in, the response comes out and its body is read to the end, all
//! ready at the first poll.
//!
//! * `http/no_layer`: the bare service;
//! * `http/notify_unlistened`: `ServerLayer::new()` (global notifier, "request.http") and nobody
//!   listening;
//! * `http/notify_listened`: the same with one event-object subscriber (it does nothing);
//! * `http/tower_http_trace`: tower-http's `TraceLayer::new_for_http()` with a `tracing`
//!   `Registry` as the default subscriber (a span per request, its default on-request and
//!   on-response events);
//! * `http/tower_http_trace_disabled`: the same layer with no `tracing` subscriber at all (the peer
//!   of `notify_unlistened`).
//!
//! * `http/floor_scope`: the least an unlistened request without a `traceparent` must do, with
//!   no tower service around it: look for the trace headers, start a trace, make the request's
//!   scope and enter it three times (the handler's call, the future's poll, the body's poll);
//! * `http/floor_traceparent`: the least a request that comes with a `traceparent` and makes one
//!   call must do for it: parse the header, draw the call's span id, format its header value.
//!
//! Targets: unlistened ≤ 5 ns over `no_layer` (issue 36; issue 45's, with propagation always on:
//! ≤ 80 ns); listened ≤ `tower_http_trace`.
//!
//! `cargo bench --bench http -- --warm-up-time 1 --measurement-time 3`

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body::Body;
use http_body_util::{Empty, Full};
use notify_core::trace_context::{self, TraceFlags, TraceParent};
use notify_core::{context, Event, Notifier, Subscriber};
use notify_http::ServerLayer;
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

/// Polls a future that is ready at once (every future here is).
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("in-process services answer at once"),
    }
}

/// Reads a body that is ready at once to its end; returns its data bytes.
fn drain<B: Body<Data = Bytes>>(body: B) -> usize {
    let mut body = pin!(body);
    let mut bytes = 0;
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(frame)) = body.as_mut().poll_frame(&mut cx) {
        if let Ok(data) = frame.map(|f| f.into_data()) {
            bytes += data.map_or(0, |d| d.len());
        }
    }
    bytes
}

/// Sends one request through a clone of `service` (as axum and hyper do per request) and reads
/// the response body. Not inlined, so that `valgrind --tool=callgrind` can count its
/// instructions per call (`--toggle-collect='*one_request*'`).
#[inline(never)]
fn one_request<S, B>(service: &S) -> usize
where
    S: Service<Request<Empty<Bytes>>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: Body<Data = Bytes>,
{
    let request = Request::get("/books/42").body(Empty::new()).unwrap();
    let response = ready(service.clone().oneshot(request)).unwrap();
    drain(response.into_body())
}

fn handler(_: Request<Empty<Bytes>>) -> std::future::Ready<Result<Response<Full<Bytes>>, Infallible>> {
    std::future::ready(Ok(Response::new(Full::new(Bytes::from_static(b"a book")))))
}

/// `floor_scope`'s work. Not inlined, for callgrind (`--toggle-collect='*floor_scope*'`).
#[inline(never)]
fn floor_scope(headers: &HeaderMap) -> u64 {
    let (context, propagated) = trace_context::extract_propagated(headers);
    let context = if context.is_none() {
        notify_core::Context::new_trace()
    } else {
        context
    };
    let mut scope = context::Scope::new(Some(context), propagated);
    let mut seen = 0;
    for _ in 0..3 {
        let _entered = scope.enter();
        seen += context::current_event_id().map_or(1, |id| id.get());
    }
    seen
}

/// `floor_traceparent`'s work. Not inlined, for callgrind.
#[inline(never)]
fn floor_traceparent(headers: &HeaderMap) -> HeaderValue {
    let (context, _) = trace_context::extract_propagated(headers);
    let trace = context.trace_id().expect("a valid traceparent");
    let call =
        TraceParent::new(trace, trace_context::new_span_id(), TraceFlags::SAMPLED).expect("a span id is never 0");
    HeaderValue::from_bytes(&call.to_bytes()).expect("ASCII")
}

fn http(c: &mut Criterion) {
    let mut group = c.benchmark_group("http");
    let bare = service_fn(handler);
    group.bench_function("no_layer", |b| b.iter(|| black_box(one_request(black_box(&bare)))));

    let notify = ServiceBuilder::new()
        .layer(ServerLayer::new())
        .service(service_fn(handler));
    assert_eq!(one_request(&notify), 6);
    group.bench_function("notify_unlistened", |b| {
        b.iter(|| black_box(one_request(black_box(&notify))))
    });

    let subscription = Notifier::global().subscribe(
        notify_http::SERVER_EVENT,
        Subscriber::event(|e: &Event| {
            black_box(e);
        }),
    );
    group.bench_function("notify_listened", |b| {
        b.iter(|| black_box(one_request(black_box(&notify))))
    });
    subscription.unsubscribe().unwrap();

    let traced = ServiceBuilder::new()
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .service(service_fn(handler));
    // tracing with no subscriber: TraceLayer's own disabled cost, the peer of notify_unlistened.
    group.bench_function("tower_http_trace_disabled", |b| {
        b.iter(|| black_box(one_request(black_box(&traced))))
    });
    let registry = tracing_subscriber::registry();
    tracing::subscriber::with_default(registry, || {
        group.bench_function("tower_http_trace", |b| {
            b.iter(|| black_box(one_request(black_box(&traced))))
        });
    });

    let empty = HeaderMap::new();
    group.bench_function("floor_scope", |b| b.iter(|| black_box(floor_scope(black_box(&empty)))));
    let mut incoming = HeaderMap::new();
    incoming.insert(
        trace_context::TRACEPARENT,
        HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    );
    group.bench_function("floor_traceparent", |b| {
        b.iter(|| black_box(floor_traceparent(black_box(&incoming))))
    });
    group.finish();
}

criterion_group!(benches, http);
criterion_main!(benches);
