//! The layers around in-process services (tower's `service_fn`, no network): the paths a real
//! server rarely takes on demand (inner errors, body errors, gRPC trailers, empty bodies, events
//! nobody listens to).

mod support;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Empty, Full};
use notify_core::{event::Outcome, Value};
use notify_http::classify::GrpcErrorsAsFailures;
use notify_http::{ClientLayer, ServerLayer};
use support::{u64_of, Captured};
use tower::{service_fn, ServiceBuilder, ServiceExt};

fn request() -> Request<Empty<Bytes>> {
    Request::get("http://example.test/path").body(Empty::new()).unwrap()
}

/// A body of one data frame then trailers, or an error instead of the trailers.
struct Frames {
    data: Option<Bytes>,
    end: Option<Result<HeaderMap, &'static str>>,
}

impl Body for Frames {
    type Data = Bytes;
    type Error = &'static str;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.end.take().map(|end| end.map(Frame::trailers)))
    }
}

fn grpc_status(code: &'static str) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(code));
    trailers
}

#[tokio::test]
async fn an_error_of_the_inner_service_is_recorded_and_ends_the_event() {
    let captured = Captured::new();
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Err::<Response<Empty<Bytes>>, _>("backend unreachable")
        }));
    assert_eq!(service.oneshot(request()).await.unwrap_err(), "backend unreachable");
    let events = captured.named("request.http");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome(), Outcome::Completed);
    assert_eq!(
        events[0].payload().get("exception").and_then(Value::as_exception),
        Some(("http.error", "backend unreachable"))
    );
    assert_eq!(events[0].payload().get("http.response.status_code"), None);
}

#[tokio::test]
async fn a_body_error_is_recorded_with_the_bytes_sent_before_it() {
    let captured = Captured::new();
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Ok::<_, Infallible>(Response::new(Frames {
                data: Some(Bytes::from_static(b"12345")),
                end: Some(Err("disk gone")),
            }))
        }));
    let response = service.oneshot(request()).await.unwrap();
    assert!(
        captured.events().is_empty(),
        "the event ends with the body, not with the head"
    );
    assert_eq!(response.into_body().collect().await.unwrap_err(), "disk gone");
    let event = &captured.named("request.http")[0];
    assert_eq!(
        event.payload().get("exception").and_then(Value::as_exception),
        Some(("http.error", "disk gone"))
    );
    assert_eq!(u64_of(event, "http.response.body.size"), Some(5));
}

#[tokio::test]
async fn grpc_status_in_trailers_decides_the_failure() {
    for (code, failure) in [("0", None), ("13", Some("grpc-status 13 (INTERNAL)"))] {
        let captured = Captured::new();
        let service = ServiceBuilder::new()
            .layer(
                ServerLayer::new()
                    .notifier(&captured.notifier)
                    .classifier(GrpcErrorsAsFailures::new()),
            )
            .service(service_fn(move |_: Request<Empty<Bytes>>| async move {
                Ok::<_, Infallible>(Response::new(Frames {
                    data: Some(Bytes::from_static(b"msg")),
                    end: Some(Ok(grpc_status(code))),
                }))
            }));
        let body = service
            .oneshot(request())
            .await
            .unwrap()
            .into_body()
            .collect()
            .await
            .unwrap();
        assert_eq!(body.trailers().and_then(|t| t.get("grpc-status")).unwrap(), code);
        let event = &captured.named("request.http")[0];
        assert_eq!(
            event.payload().get("exception").and_then(Value::as_exception),
            failure.map(|message| ("grpc.status", message)),
            "grpc-status {code}"
        );
    }
    // A body that ends without trailers: a failure.
    let captured = Captured::new();
    let service = ServiceBuilder::new()
        .layer(
            ServerLayer::new()
                .notifier(&captured.notifier)
                .classifier(GrpcErrorsAsFailures::new()),
        )
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"m"))))
        }));
    service
        .oneshot(request())
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        captured.named("request.http")[0]
            .payload()
            .get("exception")
            .and_then(Value::as_exception),
        Some(("grpc.status", "the response ended without a grpc-status"))
    );
}

/// An empty body may never be polled (hyper does not poll a body that says it ended): the event
/// ends with the response head.
#[tokio::test]
async fn an_empty_body_ends_the_event_with_the_head() {
    let captured = Captured::new();
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::NO_CONTENT)
                    .body(Empty::<Bytes>::new())
                    .unwrap(),
            )
        }));
    let response = service.oneshot(request()).await.unwrap();
    let events = captured.named("request.http");
    assert_eq!(events.len(), 1, "ended before the body was polled");
    assert_eq!(u64_of(&events[0], "http.response.status_code"), Some(204));
    assert_eq!(u64_of(&events[0], "http.response.body.size"), Some(0));
    drop(response);
    assert_eq!(
        captured.events().len(),
        1,
        "dropping the ended body publishes nothing more"
    );
}

/// A response future dropped before the inner service answered: cancelled.
#[tokio::test]
async fn a_response_future_dropped_before_the_answer_cancels_the_event() {
    let captured = Captured::new();
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| {
            std::future::pending::<Result<Response<Empty<Bytes>>, Infallible>>()
        }));
    let call = service.oneshot(request());
    let timed_out = tokio::time::timeout(std::time::Duration::from_millis(10), call).await;
    assert!(timed_out.is_err());
    let events = captured.named("request.http");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome(), Outcome::Cancelled);
}

/// Nobody listens: no event, the response passes through unchanged.
#[tokio::test]
async fn unlistened_requests_publish_nothing() {
    let captured = Captured::new();
    let quiet = notify_core::Notifier::new();
    let service = ServiceBuilder::new()
        .layer(ServerLayer::new().notifier(&quiet))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"hi"))))
        }));
    let body = service
        .oneshot(request())
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&body[..], b"hi");
    assert!(captured.events().is_empty());
    assert_eq!(quiet.subscriber_count(), 0);
}

/// The client layer: a failing call is recorded and ends the event; a 404 answer is a failure for
/// the caller; the event's kind is "client".
#[tokio::test]
async fn client_events_record_failures_and_statuses() {
    let captured = Captured::new();
    let failing = ServiceBuilder::new()
        .layer(ClientLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Err::<Response<Empty<Bytes>>, _>("connection refused")
        }));
    assert!(failing
        .oneshot(Request::get("http://db.test:5984/x").body(Empty::new()).unwrap())
        .await
        .is_err());
    let not_found = ServiceBuilder::new()
        .layer(ClientLayer::new().notifier(&captured.notifier))
        .service(service_fn(|_: Request<Empty<Bytes>>| async {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(404)
                    .body(Full::new(Bytes::from_static(b"no")))
                    .unwrap(),
            )
        }));
    let response = not_found
        .oneshot(Request::post("http://api.test/books").body(Empty::new()).unwrap())
        .await
        .unwrap();
    response.into_body().collect().await.unwrap();
    let events = captured.named("request.http_client");
    assert_eq!(events.len(), 2);
    let (failed, missing) = (&events[0], &events[1]);
    assert_eq!(
        failed.payload().get("otel.kind").and_then(Value::as_str),
        Some("client")
    );
    assert_eq!(
        failed.payload().get("server.address").and_then(Value::as_str),
        Some("db.test")
    );
    assert_eq!(u64_of(failed, "server.port"), Some(5984));
    assert_eq!(
        failed.payload().get("exception").and_then(Value::as_exception),
        Some(("http.error", "connection refused"))
    );
    assert_eq!(
        missing.payload().get("http.request.method").and_then(Value::as_str),
        Some("POST")
    );
    assert_eq!(missing.payload().get("server.port"), None);
    assert_eq!(
        missing.payload().get("exception").and_then(Value::as_exception),
        Some(("http.status", "404 Not Found"))
    );
    assert_eq!(u64_of(missing, "http.response.body.size"), Some(2));
}
