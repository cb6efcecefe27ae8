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
//! Targets: unlistened ≤ 5 ns over `no_layer`; listened ≤ `tower_http_trace`.
//!
//! `cargo bench --bench http -- --warm-up-time 1 --measurement-time 3`

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http::{Request, Response};
use http_body::Body;
use http_body_util::{Empty, Full};
use notify_core::{Event, Notifier, Subscriber};
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
    group.finish();
}

criterion_group!(benches, http);
criterion_main!(benches);
