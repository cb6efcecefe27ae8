//! W3C trace context over real sockets: `continue_trace(false)`, and a call from one server to a
//! second carrying the context (tests/traceparent_in.rs: incoming traceparents, valid and not).

mod support;

use axum::extract::MatchedPath;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use notify_core::{Payload, TraceId};
use notify_http::{ClientLayer, ServerLayer};
use support::{client, fetch, serve, str_of, u64_of, Captured};
use tower::{ServiceBuilder, ServiceExt};

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
async fn continue_trace_false_ignores_the_incoming_traceparent() {
    let captured = Captured::new();
    let app = Router::new()
        .route("/work", get(|| async { "ok" }))
        .layer(layer(&captured).continue_trace(false));
    let address = serve(app).await;
    fetch(
        &client(),
        format!("http://{address}/work"),
        &[("traceparent", &format!("00-{TRACE}-{PARENT}-01"))],
    )
    .await;
    let request = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(request.parent_id(), None);
    assert_ne!(request.trace_id(), trace());
}

type Outgoing = notify_http::ClientService<Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>>;

/// Server A's handler calls server B through the client layer: one trace, A's request -> the
/// call -> B's request (remote parent) -> B's child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_second_server_carries_the_context() {
    let captured = Captured::new();
    let second = serve(app(&captured)).await;
    for listened_client in [true, false] {
        let client_layer = if listened_client {
            ClientLayer::new().notifier(&captured.notifier)
        } else {
            ClientLayer::new().notifier(&notify_core::Notifier::new())
        };
        let outgoing: Outgoing = ServiceBuilder::new()
            .layer(client_layer)
            .service(Client::builder(TokioExecutor::new()).build_http());
        let first_app = Router::new()
            .route(
                "/front",
                get(move || {
                    let outgoing = outgoing.clone();
                    async move {
                        let request = http::Request::get(format!("http://{second}/work"))
                            .body(Empty::new())
                            .unwrap();
                        let response = outgoing.oneshot(request).await.unwrap();
                        response.into_body().collect().await.unwrap().to_bytes()
                    }
                }),
            )
            .layer(layer(&captured).name("front.http"));
        let first = serve(first_app).await;
        let before = captured.named("request.http").len();
        assert_eq!(
            fetch(&client(), format!("http://{first}/front"), &[]).await,
            (200, "ok".to_owned())
        );
        let front = captured.wait_for("front.http", 1).await.pop().unwrap();
        let back = captured.wait_for("request.http", before + 1).await.pop().unwrap();
        let query = captured.named("query.sql").pop().unwrap();
        assert_eq!(front.parent_id(), None);
        assert_eq!(
            back.trace_id(),
            front.trace_id(),
            "the second server continued the trace"
        );
        assert!(back.parent_is_remote());
        assert_eq!(
            (query.trace_id(), query.parent_id()),
            (front.trace_id(), Some(back.id()))
        );
        if listened_client {
            let call = captured.named("request.http_client").pop().unwrap();
            assert_eq!(call.trace_id(), front.trace_id());
            assert_eq!(
                call.parent_id(),
                Some(front.id()),
                "the call is a child of the request it is made in"
            );
            assert_eq!(
                back.parent_id(),
                Some(call.id()),
                "the second server's parent is the call"
            );
            assert_eq!(str_of(&call, "otel.kind"), Some("client"));
            assert_eq!(u64_of(&call, "http.response.status_code"), Some(200));
            assert_eq!(u64_of(&call, "http.response.body.size"), Some(2));
        } else {
            // Nobody listens to calls: the call is a non-recording span of its own (a fresh
            // parent id, not the request's event), in the request's trace.
            let parent = back.parent_id().expect("a remote parent");
            assert_ne!(parent, front.id());
        }
    }
}
