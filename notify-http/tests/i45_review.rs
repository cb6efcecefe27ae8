//! Issue 45 reviewed as a service team adopting notify would: `traceresponse` in every listening
//! configuration and kind of response, events that end cancelled, hostile headers, and many
//! concurrent requests each passing its own trace on.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use notify_core::event::Outcome;
use notify_core::trace_context::{self, TraceParent};
use notify_core::{context, Notifier};
use notify_http::{ClientLayer, ServerLayer, SERVER_EVENT};
use support::{serve, Captured, Chunks};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn incoming() -> String {
    format!("00-{TRACE}-{PARENT}-01")
}

#[derive(Clone, Copy, Debug)]
enum Answer {
    Now,
    AfterAwait,
    Status500,
    Streaming,
}

async fn answer(kind: Answer) -> Result<Response<axum::body::Body>, Infallible> {
    Ok(match kind {
        Answer::Now => Response::new(axum::body::Body::from("ok")),
        Answer::AfterAwait => {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Response::new(axum::body::Body::from("ok"))
        }
        Answer::Status500 => {
            tokio::task::yield_now().await;
            let mut response = Response::new(axum::body::Body::from("boom"));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
        Answer::Streaming => Response::new(axum::body::Body::new(Chunks::new(3, Duration::from_millis(2)))),
    })
}

/// `traceresponse` names the request's trace (the caller's, or a new one), a span other than the
/// caller's, in every configuration (listened; unlistened on the global notifier's static
/// callsite; unlistened on a notifier of its own; an event name nobody listens to) and for every
/// kind of answer (at once, after an await, a 500, a streaming body).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_traceresponse_in_every_configuration_and_answer() {
    let captured = Captured::new();
    let unlistened = Notifier::new();
    let layers = [
        ("listened", ServerLayer::new().notifier(&captured.notifier)),
        ("global unlistened", ServerLayer::new()),
        ("own notifier unlistened", ServerLayer::new().notifier(&unlistened)),
        (
            "other name",
            ServerLayer::new().notifier(&captured.notifier).name("nobody.http"),
        ),
    ];
    let mut listened_spans = Vec::new();
    for (what, layer) in layers {
        for kind in [Answer::Now, Answer::AfterAwait, Answer::Status500, Answer::Streaming] {
            for continued in [true, false] {
                let service = ServiceBuilder::new()
                    .layer(layer.clone().traceresponse(true))
                    .service(service_fn(move |_: Request<()>| answer(kind)));
                let mut request = Request::get("/").body(()).unwrap();
                if continued {
                    request
                        .headers_mut()
                        .insert("traceparent", HeaderValue::from_str(&incoming()).unwrap());
                }
                let response = service.oneshot(request).await.unwrap();
                let value = response
                    .headers()
                    .get("traceresponse")
                    .unwrap_or_else(|| panic!("{what} {kind:?} {continued}: no traceresponse"));
                let parsed: TraceParent = value.to_str().unwrap().parse().unwrap();
                if continued {
                    assert_eq!(parsed.trace_id().to_string(), TRACE, "{what} {kind:?}");
                    assert_ne!(parsed.parent_id().to_string(), PARENT, "{what} {kind:?}");
                    assert!(parsed.flags().is_sampled());
                } else {
                    assert!(parsed.flags().is_random(), "{what} {kind:?}");
                }
                if what == "listened" {
                    listened_spans.push(parsed.parent_id());
                }
                response.into_body().collect().await.unwrap();
            }
        }
    }
    // Listened: the span named is the request's event.
    let events = captured.wait_for(SERVER_EVENT, 8).await;
    assert_eq!(events.len(), 8);
    let mut ids: Vec<_> = events.iter().map(|e| e.id()).collect();
    ids.sort();
    listened_spans.sort();
    assert_eq!(ids, listened_spans);
}

/// A listened request's event ends cancelled when the client goes away (the response future or
/// the body dropped): it still carries the request's `tracestate` and baggage, as a completed
/// one does (exporters send them on from the event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_a_cancelled_request_keeps_its_tracestate_and_baggage() {
    let captured = Captured::new();
    let headers = |request: &mut Request<()>| {
        let h = request.headers_mut();
        h.insert("traceparent", HeaderValue::from_str(&incoming()).unwrap());
        h.insert("tracestate", HeaderValue::from_static("foo=1"));
        h.insert("baggage", HeaderValue::from_static("tenant=acme"));
    };
    let layer = ServerLayer::new().notifier(&captured.notifier);

    // The response future dropped before the handler answers.
    let service = ServiceBuilder::new()
        .layer(layer.clone())
        .service(service_fn(|_: Request<()>| async {
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
        }));
    let mut request = Request::get("/").body(()).unwrap();
    headers(&mut request);
    let future = service.oneshot(request);
    assert!(tokio::time::timeout(Duration::from_millis(10), future).await.is_err());

    // The body dropped after its first frame.
    let service = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(Chunks::new(usize::MAX, Duration::from_millis(1))))
        }));
    let mut request = Request::get("/").body(()).unwrap();
    headers(&mut request);
    let mut body = service.oneshot(request).await.unwrap().into_body();
    body.frame().await.unwrap().unwrap();
    drop(body);

    // A call the handler makes, dropped before its answer: the client event too.
    let client = ServiceBuilder::new()
        .layer(ClientLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<()>| async {
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
        }));
    let mut request = Request::get("/").body(()).unwrap();
    headers(&mut request);
    let (context, propagated) = trace_context::extract_propagated(request.headers());
    let mut client = client;
    client.ready().await.unwrap();
    let call = {
        let _context = context.attach();
        let _propagated = propagated.attach();
        client.call(Request::get("http://back/").body(()).unwrap())
    };
    assert!(tokio::time::timeout(Duration::from_millis(10), call).await.is_err());

    let mut events = captured.wait_for(SERVER_EVENT, 2).await;
    events.extend(captured.wait_for(notify_http::CLIENT_EVENT, 1).await);
    assert_eq!(events.len(), 3);
    for event in events {
        assert_eq!(event.outcome(), Outcome::Cancelled);
        assert_eq!(event.trace_state().as_str(), "foo=1", "{event:?}");
        assert_eq!(event.baggage().get("tenant"), Some("acme"), "{event:?}");
    }
}

/// The headers a second server received, and the front service calling it through
/// `ClientLayer`, nobody listening; the front answers with the baggage it saw.
async fn front_and_back() -> (SocketAddr, Arc<Mutex<Vec<HeaderMap>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = received.clone();
    let back = serve(Router::new().route(
        "/back",
        get(move |headers: HeaderMap| {
            sink.lock().unwrap().push(headers);
            async { "ok" }
        }),
    ))
    .await;
    let outgoing = ServiceBuilder::new()
        .layer(ClientLayer::new().notifier(&Notifier::new()))
        .service(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    let front = Router::new()
        .route(
            "/front",
            get(move || {
                let outgoing = outgoing.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let request = Request::get(format!("http://{back}/back")).body(Empty::new()).unwrap();
                    let response = outgoing.oneshot(request).await.unwrap();
                    response.into_body().collect().await.unwrap();
                    context::baggage().to_string()
                }
            }),
        )
        .layer(ServerLayer::new().notifier(&Notifier::new()).traceresponse(true));
    (serve(front).await, received)
}

/// GETs `uri` with raw header bytes; the status, headers and body.
async fn get_raw(uri: String, headers: &[(&str, &[u8])]) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::get(uri);
    for (name, value) in headers {
        request = request.header(*name, HeaderValue::from_bytes(value).unwrap());
    }
    let response = support::client()
        .request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.headers, String::from_utf8_lossy(&body).into_owned())
}

/// Hostile headers, each with its exact outcome: a new trace (counted) or the caller's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_hostile_headers() {
    let (front, received) = front_and_back().await;
    let uri = format!("http://{front}/front");
    let last = |received: &Arc<Mutex<Vec<HeaderMap>>>| received.lock().unwrap().last().unwrap().clone();
    let trace_of = |h: &HeaderMap| -> TraceParent { h["traceparent"].to_str().unwrap().parse().unwrap() };

    // 50 identical traceparent headers: not one value, rejected, a new trace.
    let tp = incoming();
    let many: Vec<(&str, &[u8])> = (0..50).map(|_| ("traceparent", tp.as_bytes())).collect();
    let before = trace_context::stats();
    let (status, head, _) = get_raw(uri.clone(), &many).await;
    assert_eq!(status, 200);
    let sent = trace_of(&last(&received));
    assert_ne!(sent.trace_id().to_string(), TRACE);
    assert_eq!(
        head["traceresponse"].to_str().unwrap()[3..35],
        sent.trace_id().to_string()
    );
    assert!(trace_context::stats().rejected > before.rejected);

    // Invalid UTF-8 (obs-text) bytes: in traceparent, rejected; in tracestate, the list discarded;
    // in a baggage member, that member alone dropped.
    let mut bad_tp = tp.clone().into_bytes();
    bad_tp[10] = 0xff;
    let before = trace_context::stats();
    get_raw(uri.clone(), &[("traceparent", &bad_tp)]).await;
    assert_ne!(trace_of(&last(&received)).trace_id().to_string(), TRACE);
    assert!(trace_context::stats().rejected > before.rejected);
    let before = trace_context::stats();
    let (_, _, body) = get_raw(
        uri.clone(),
        &[
            ("traceparent", tp.as_bytes()),
            ("tracestate", b"a=1,b=\xff"),
            ("baggage", b"k=\xe9t\xe9,a=1"),
            ("baggage", b"ok=1"),
        ],
    )
    .await;
    let h = last(&received);
    assert_eq!(trace_of(&h).trace_id().to_string(), TRACE);
    assert!(h.get("tracestate").is_none());
    assert_eq!(h["baggage"], "a=1,ok=1", "the member with obs-text bytes dropped alone");
    assert_eq!(body, "a=1,ok=1");
    let after = trace_context::stats();
    assert!(after.tracestate_discarded > before.tracestate_discarded);
    assert!(after.baggage_members_dropped > before.baggage_members_dropped);

    // A 100 KB tracestate: more than 32 members, discarded whole (counted), quickly; a
    // 100 KB traceparent of a future version: read by its known fields.
    let huge_state: String = (0..10_000).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
    let before = trace_context::stats();
    let started = Instant::now();
    get_raw(
        uri.clone(),
        &[("traceparent", tp.as_bytes()), ("tracestate", huge_state.as_bytes())],
    )
    .await;
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(last(&received).get("tracestate").is_none());
    assert!(trace_context::stats().tracestate_discarded > before.tracestate_discarded);
    let future = format!("cc-{TRACE}-{PARENT}-01-{}", "x".repeat(100_000));
    get_raw(uri.clone(), &[("traceparent", future.as_bytes())]).await;
    assert_eq!(trace_of(&last(&received)).trace_id().to_string(), TRACE);

    // A 100 KB baggage header of distinct keys: the first 64 members (8 KB at most) pass, the
    // rest are dropped and counted, in bounded time.
    let huge: String = (0..14_000).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
    assert!(huge.len() > 100_000);
    let before = trace_context::stats();
    let started = Instant::now();
    get_raw(
        uri.clone(),
        &[("traceparent", tp.as_bytes()), ("baggage", huge.as_bytes())],
    )
    .await;
    let took = started.elapsed();
    let h = last(&received);
    let baggage: notify_core::baggage::Baggage = h["baggage"].to_str().unwrap().parse().unwrap();
    assert_eq!(
        (baggage.len(), baggage.get("k0"), baggage.get("k64")),
        (64, Some("v"), None)
    );
    assert!(trace_context::stats().baggage_members_dropped - before.baggage_members_dropped >= 14_000 - 64);
    assert!(
        took < Duration::from_millis(500),
        "a 100 KB baggage header took {took:?}"
    );
}

/// 300 concurrent requests on a multi-thread runtime, nobody listening, each with its own trace
/// and baggage: each call the handler makes after an await carries exactly its request's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn i45_review_concurrent_requests_each_pass_their_own_trace_on() {
    let (front, received) = front_and_back().await;
    let client = support::client();
    let calls: Vec<_> = (0..300_u32)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let trace = format!("{:032x}", 0x1000 + i);
                let tp = format!("00-{trace}-{PARENT}-01");
                let baggage = format!("req={i}");
                let (status, body) = support::fetch(
                    &client,
                    format!("http://{front}/front"),
                    &[("traceparent", &tp), ("baggage", &baggage)],
                )
                .await;
                assert_eq!((status, body), (200, baggage));
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 300);
    for h in received {
        let tp: TraceParent = h["traceparent"].to_str().unwrap().parse().unwrap();
        let i: u128 = h["baggage"]
            .to_str()
            .unwrap()
            .strip_prefix("req=")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(tp.trace_id().get(), 0x1000 + i);
    }
}

/// A handler that panics behind `CatchPanicLayer` (a current-thread runtime: the next request
/// runs on the same thread): nothing of the panicked request's trace or baggage stays current
/// for the next one, listened or not. The 500 made outside the layer has no `traceresponse`.
#[tokio::test(flavor = "current_thread")]
async fn i45_review_a_panicking_handler_leaves_nothing_current() {
    let captured = Captured::new();
    for layer in [ServerLayer::new().notifier(&captured.notifier), ServerLayer::new()] {
        let app = Router::new()
            .route(
                "/panic",
                get(|| async {
                    tokio::task::yield_now().await;
                    panic!("on purpose");
                    #[allow(unreachable_code)]
                    ""
                }),
            )
            .route(
                "/seen",
                get(|| async {
                    format!(
                        "{}|{}",
                        notify_core::Context::current()
                            .trace_id()
                            .map(|t| t.to_string())
                            .unwrap_or_default(),
                        context::baggage()
                    )
                }),
            )
            .layer(layer.traceresponse(true))
            .layer(tower_http::catch_panic::CatchPanicLayer::new());
        let address = serve(app).await;
        let tp = incoming();
        let (status, head, _) = get_raw(
            format!("http://{address}/panic"),
            &[("traceparent", tp.as_bytes()), ("baggage", b"tenant=acme")],
        )
        .await;
        assert_eq!(status, 500);
        assert!(head.get("traceresponse").is_none(), "made outside the layer");
        let (_, head, body) = get_raw(format!("http://{address}/seen"), &[]).await;
        let (trace, baggage) = body.split_once('|').unwrap();
        assert_ne!(trace, TRACE);
        assert_eq!(trace, &head["traceresponse"].to_str().unwrap()[3..35]);
        assert_eq!(baggage, "");
        assert!(notify_core::Context::current().is_none());
        assert!(context::baggage().is_empty());
    }
}

/// `ClientLayer::tracestate_entry`: the own entry first, the right-most member pushed out of a
/// full list of 32, a Level 2 multi-tenant key accepted, an invalid key refused at startup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_own_tracestate_entry_goes_first_and_keeps_the_limits() {
    let captured = Captured::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let client = ServiceBuilder::new()
        .layer(
            ClientLayer::new()
                .notifier(&captured.notifier)
                .tracestate_entry("t1@acme"),
        )
        .service(service_fn(move |request: Request<()>| {
            sink.lock().unwrap().push(request.headers().clone());
            async { Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new())) }
        }));
    let full: Vec<String> = (0..32).map(|i| format!("v{i}=x")).collect();
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_str(&incoming()).unwrap());
    headers.insert("tracestate", HeaderValue::from_str(&full.join(",")).unwrap());
    let (context, propagated) = trace_context::extract_propagated(&headers);
    let mut client = client;
    client.ready().await.unwrap();
    let call = {
        let _c = context.attach();
        let _p = propagated.attach();
        client.call(Request::get("http://back/").body(()).unwrap())
    };
    call.await.unwrap();
    let sent = seen.lock().unwrap()[0].clone();
    let state = sent["tracestate"].to_str().unwrap();
    let members: Vec<&str> = state.split(',').collect();
    let event = &captured.wait_for(notify_http::CLIENT_EVENT, 1).await[0];
    assert_eq!(members.len(), 32);
    assert_eq!(members[0], format!("t1@acme={}", event.id()));
    assert_eq!(members[1], "v0=x");
    assert_eq!(members[31], "v30=x", "the right-most member is pushed out");
    let parent: TraceParent = sent["traceparent"].to_str().unwrap().parse().unwrap();
    assert_eq!(parent.parent_id(), event.id());
    assert!(std::panic::catch_unwind(|| ClientLayer::new().tracestate_entry("Acme")).is_err());
}

/// A sampler that drops every trace: the request is still propagated, unsampled, and
/// `traceresponse` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_an_unsampled_request_is_propagated_unsampled() {
    let captured = Captured::new();
    captured.notifier.set_sampler(notify_core::export::Sampler::ratio(0.0));
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&captured.notifier).traceresponse(true))
        .service(service_fn(|_: Request<()>| answer(Answer::AfterAwait)));
    let response = service.oneshot(Request::get("/").body(()).unwrap()).await.unwrap();
    let value: TraceParent = response.headers()["traceresponse"].to_str().unwrap().parse().unwrap();
    assert!(!value.flags().is_sampled(), "{value}");
    assert!(value.flags().is_random());
}

/// docs/trace-context.md's recipe for a handler sending its own `tracestate` list,
/// `Propagated::current().with_trace_state(state).scope(future)`: the calls carry it whether
/// the request came with a `tracestate`, with a `traceparent` alone, or with nothing, listened
/// or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_a_handler_sends_its_own_tracestate() {
    let captured = Captured::new();
    for layer in [ServerLayer::new().notifier(&captured.notifier), ServerLayer::new()] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let client = ServiceBuilder::new()
            .layer(ClientLayer::new().notifier(&Notifier::new()))
            .service(service_fn(move |request: Request<()>| {
                sink.lock().unwrap().push(request.headers().clone());
                async { Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new())) }
            }));
        let service = ServiceBuilder::new()
            .layer(layer)
            .service(service_fn(move |_: Request<()>| {
                let client = client.clone();
                async move {
                    tokio::task::yield_now().await;
                    let state = context::trace_state().with("acme", "1").unwrap();
                    context::Propagated::current()
                        .with_trace_state(state)
                        .scope(client.oneshot(Request::get("http://back/").body(()).unwrap()))
                        .await
                }
            }));
        let tp = incoming();
        for (headers, want) in [
            (
                vec![("traceparent", tp.as_str()), ("tracestate", "foo=1")],
                "acme=1,foo=1",
            ),
            (vec![("traceparent", tp.as_str())], "acme=1"),
            (vec![("traceparent", tp.as_str()), ("baggage", "k=v")], "acme=1"),
            (vec![], "acme=1"),
        ] {
            let mut request = Request::get("/").body(()).unwrap();
            for (name, value) in &headers {
                request
                    .headers_mut()
                    .insert(*name, HeaderValue::from_str(value).unwrap());
            }
            service.clone().oneshot(request).await.unwrap();
            let sent = seen.lock().unwrap().last().unwrap().clone();
            assert_eq!(
                sent.get("tracestate").map(|v| v.to_str().unwrap()),
                Some(want),
                "{headers:?}: {sent:?}"
            );
            let parent: TraceParent = sent["traceparent"].to_str().unwrap().parse().unwrap();
            if headers.is_empty() {
                assert!(parent.flags().is_random(), "a trace notify started: {parent}");
            } else {
                assert_eq!(parent.trace_id().to_string(), TRACE);
            }
        }
    }
}

/// `record_baggage` and redaction: a policy names the recorded key (`baggage.<key>`); the
/// baggage key alone does not match it (only header names have that shortcut).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_recorded_baggage_is_redacted_by_its_recorded_key() {
    use notify_core::redaction::Redaction;
    for (policy, redacted) in [
        (Redaction::builder().key("baggage.user"), true),
        (Redaction::builder().key_glob("baggage.*"), true),
        (Redaction::builder().key("user"), false),
    ] {
        let captured = Captured::new();
        captured.notifier.set_redaction(policy.build().unwrap());
        let service = ServiceBuilder::new()
            .layer(ServerLayer::new().notifier(&captured.notifier).record_baggage(["user"]))
            .service(service_fn(|_: Request<()>| answer(Answer::Now)));
        let mut request = Request::get("/").body(()).unwrap();
        request
            .headers_mut()
            .insert("baggage", HeaderValue::from_static("user=alice,other=x"));
        service
            .oneshot(request)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await
            .unwrap();
        let event = &captured.wait_for(SERVER_EVENT, 1).await[0];
        let value = support::str_of(event, "baggage.user");
        assert_eq!(value == Some("alice"), !redacted, "{value:?}");
        assert!(event.payload().get("baggage.other").is_none());
    }
}

/// `traceresponse` echoes the incoming sampled and random flags, listened or not, also for a
/// request that brought `tracestate` and baggage (a record of its trace) or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_review_traceresponse_keeps_the_incoming_flags() {
    let captured = Captured::new();
    for layer in [ServerLayer::new().notifier(&captured.notifier), ServerLayer::new()] {
        for flags in ["00", "01", "02", "03"] {
            for extra in [false, true] {
                let service = ServiceBuilder::new()
                    .layer(layer.clone().traceresponse(true))
                    .service(service_fn(|_: Request<()>| answer(Answer::AfterAwait)));
                let mut request = Request::get("/").body(()).unwrap();
                let h = request.headers_mut();
                h.insert(
                    "traceparent",
                    HeaderValue::from_str(&format!("00-{TRACE}-{PARENT}-{flags}")).unwrap(),
                );
                if extra {
                    h.insert("tracestate", HeaderValue::from_static("foo=1"));
                    h.insert("baggage", HeaderValue::from_static("k=v"));
                }
                let response = service.oneshot(request).await.unwrap();
                let value = response.headers()["traceresponse"].to_str().unwrap().to_owned();
                assert_eq!(&value[..36], &format!("00-{TRACE}-"));
                assert_eq!(&value[53..], flags, "{layer:?} {extra}: {value}");
            }
        }
    }
}
