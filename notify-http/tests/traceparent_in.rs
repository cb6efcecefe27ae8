//! An incoming W3C `traceparent` over a real socket: continued when valid, a new trace (counted
//! as rejected) when malformed. Its own test binary with one test: notify-core's extract counters
//! are per process, and only this test's requests reach them.

mod support;

use axum::extract::MatchedPath;
use axum::routing::get;
use axum::Router;
use notify_core::{event::EventId, trace_context, Payload, TraceId};
use notify_http::ServerLayer;
use support::{client, fetch, serve, Captured};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn layer(captured: &Captured) -> ServerLayer {
    ServerLayer::new()
        .notifier(&captured.notifier)
        .route_from(|request| request.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()))
}

fn trace() -> TraceId {
    TraceId::new(u128::from_str_radix(TRACE, 16).unwrap()).unwrap()
}

/// One server that makes a child event in its handler.
fn app(captured: &Captured) -> Router {
    let n = captured.notifier.clone();
    Router::new()
        .route(
            "/work",
            get(move || {
                let n = n.clone();
                async move { n.instrument("query.sql", Payload::new, |_| "ok") }
            }),
        )
        .layer(layer(captured))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_traceparent_is_continued_and_malformed_ones_start_new_traces() {
    let captured = Captured::new();
    let address = serve(app(&captured)).await;
    let client = client();

    // Valid: same trace id, the remote span as parent, marked remote; the handler's event is a
    // local child of the request.
    let valid = format!("00-{TRACE}-{PARENT}-01");
    let before = trace_context::stats();
    fetch(&client, format!("http://{address}/work"), &[("traceparent", &valid)]).await;
    let request = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(request.trace_id(), trace());
    assert_eq!(
        request.parent_id(),
        Some(EventId::new(u64::from_str_radix(PARENT, 16).unwrap()))
    );
    assert!(request.parent_is_remote());
    let query = captured.named("query.sql").remove(0);
    assert_eq!((query.trace_id(), query.parent_id()), (trace(), Some(request.id())));
    assert!(!query.parent_is_remote());
    assert_eq!(trace_context::stats().continued - before.continued, 1);

    // The W3C test suite's malformed traceparents (and a duplicated header): each request is a
    // root of a new trace, and each is counted as rejected.
    let malformed = [
        format!("00-{}-{PARENT}-01", TRACE.to_uppercase()),
        format!("ff-{TRACE}-{PARENT}-01"),
        format!("00-00000000000000000000000000000000-{PARENT}-01"),
        format!("00-{TRACE}-0000000000000000-01"),
        format!("00-{TRACE}-{PARENT}-01-extra"),
        format!("00-{}-{PARENT}-01", &TRACE[1..]),
        format!("00-{TRACE}-{}-01", &PARENT[1..]),
        format!("00-{TRACE}-{PARENT}-0g"),
        format!("00_{TRACE}_{PARENT}_01"),
        "0".to_owned(),
        String::new(),
    ];
    let before = trace_context::stats();
    for (i, header) in malformed.iter().enumerate() {
        fetch(&client, format!("http://{address}/work"), &[("traceparent", header)]).await;
        let request = captured.wait_for("request.http", i + 2).await.remove(i + 1);
        assert_eq!(request.parent_id(), None, "{header:?} was not a new root");
        assert!(!request.parent_is_remote());
        assert_ne!(request.trace_id(), trace(), "{header:?} continued the trace");
    }
    let duplicated = format!("00-{TRACE}-{PARENT}-01");
    fetch(
        &client,
        format!("http://{address}/work"),
        &[("traceparent", &duplicated), ("traceparent", &duplicated)],
    )
    .await;
    let request = captured
        .wait_for("request.http", malformed.len() + 2)
        .await
        .pop()
        .unwrap();
    assert_eq!(request.parent_id(), None, "a duplicated traceparent was continued");
    let after = trace_context::stats();
    assert_eq!(after.rejected - before.rejected, malformed.len() as u64 + 1);
    assert_eq!(after.continued, before.continued);
}
