//! The server layer over real sockets: an axum server on a free loopback port, a hyper client
//! (or a raw TCP stream where the client must misbehave).

mod support;

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Path};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use notify_core::{event::Outcome, redaction::Redaction, Instrument, Payload, Value};
use notify_http::{Headers, ServerLayer};
use support::{client, fetch, serve, str_of, u64_of, Captured, Chunks};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_http::catch_panic::CatchPanicLayer;

fn layer(captured: &Captured) -> ServerLayer {
    ServerLayer::new()
        .notifier(&captured.notifier)
        .route_from(|request| request.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()))
}

/// 200 requests at once: each request event has its own trace, and exactly its own children (an
/// event made in the handler, one after an await, one in a task spawned with
/// `in_current_context`) are in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_requests_each_keep_their_own_trace() {
    let captured = Captured::new();
    let n = captured.notifier.clone();
    let app = Router::new()
        .route(
            "/work/{i}",
            get(move |Path(i): Path<u64>| {
                let n = n.clone();
                async move {
                    n.instrument("query.sql", || Payload::new().with("i", i), |_| ());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    n.instrument("render.view", || Payload::new().with("i", i), |_| ());
                    let job = n.clone();
                    tokio::spawn(
                        async move { job.instrument("job.app", || Payload::new().with("i", i), |_| ()) }
                            .in_current_context(),
                    )
                    .await
                    .unwrap();
                    format!("done {i}")
                }
            }),
        )
        .layer(layer(&captured));
    let address = serve(app).await;
    let client = client();
    let calls: Vec<_> = (0..200_u64)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { fetch(&client, format!("http://{address}/work/{i}"), &[]).await })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap(), (200, format!("done {i}")));
    }
    let requests = captured.wait_for("request.http", 200).await;
    assert_eq!(requests.len(), 200);
    let mut by_trace = HashMap::new();
    for request in &requests {
        assert_eq!(request.parent_id(), None, "a request without traceparent is a root");
        assert_eq!(request.outcome(), Outcome::Completed);
        assert_eq!(str_of(request, "http.route"), Some("/work/{i}"));
        let i: u64 = str_of(request, "url.path")
            .unwrap()
            .trim_start_matches("/work/")
            .parse()
            .unwrap();
        assert!(
            by_trace.insert(request.trace_id(), (request.id(), i)).is_none(),
            "two requests share a trace"
        );
    }
    let children: Vec<_> = captured
        .events()
        .into_iter()
        .filter(|e| e.name() != "request.http")
        .collect();
    assert_eq!(children.len(), 600);
    for child in &children {
        let (request_id, i) = by_trace[&child.trace_id()];
        assert_eq!(
            child.parent_id(),
            Some(request_id),
            "{} is not a child of its request",
            child.name()
        );
        assert_eq!(
            u64_of(child, "i"),
            Some(i),
            "{} is in another request's trace",
            child.name()
        );
    }
}

/// Method, path, route template, status and body bytes; 404 is not a failure, 500 is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_classified_404_is_not_a_failure_and_500_is() {
    let captured = Captured::new();
    let app = Router::new()
        .route("/books/{id}", get(|| async { "a book" }))
        .route("/broken", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "oops") }))
        .layer(layer(&captured));
    let address = serve(app).await;
    let client = client();
    assert_eq!(
        fetch(&client, format!("http://{address}/books/42?x=1"), &[]).await.0,
        200
    );
    let ok = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(fetch(&client, format!("http://{address}/nowhere"), &[]).await.0, 404);
    let not_found = captured.wait_for("request.http", 2).await.remove(1);
    assert_eq!(fetch(&client, format!("http://{address}/broken"), &[]).await.0, 500);
    let broken = captured.wait_for("request.http", 3).await.remove(2);

    assert_eq!(str_of(&ok, "otel.kind"), Some("server"));
    assert_eq!(str_of(&ok, "http.request.method"), Some("GET"));
    assert_eq!(str_of(&ok, "url.path"), Some("/books/42"));
    assert_eq!(str_of(&ok, "http.route"), Some("/books/{id}"));
    assert_eq!(u64_of(&ok, "http.response.status_code"), Some(200));
    assert_eq!(u64_of(&ok, "http.response.body.size"), Some(6));
    assert_eq!(ok.payload().get("exception"), None);

    assert_eq!(u64_of(&not_found, "http.response.status_code"), Some(404));
    assert_eq!(not_found.payload().get("exception"), None);
    assert_eq!(not_found.payload().get("http.route"), None, "no route matched");
    assert_eq!(str_of(&not_found, "url.path"), Some("/nowhere"));

    assert_eq!(u64_of(&broken, "http.response.status_code"), Some(500));
    assert_eq!(
        broken.payload().get("exception").and_then(Value::as_exception),
        Some(("http.status", "500 Internal Server Error"))
    );
    assert_eq!(u64_of(&broken, "http.response.body.size"), Some(4));
    for event in [&ok, &not_found, &broken] {
        assert_eq!(event.outcome(), Outcome::Completed);
    }
}

/// A streaming body: the event ends with its last chunk, and counts every byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_body_is_counted_whole_and_ends_the_event() {
    let captured = Captured::new();
    let app = Router::new()
        .route(
            "/stream",
            get(|| async { Body::new(Chunks::new(10, Duration::from_millis(10))) }),
        )
        .layer(layer(&captured));
    let address = serve(app).await;
    let (status, body) = fetch(&client(), format!("http://{address}/stream"), &[]).await;
    assert_eq!((status, body.len()), (200, 10_000));
    let event = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(u64_of(&event, "http.response.body.size"), Some(10_000));
    assert_eq!(event.outcome(), Outcome::Completed);
    assert!(
        event.duration() >= Duration::from_millis(90),
        "ended before the body: {:?}",
        event.duration()
    );
}

/// The client reads the first bytes and goes away: the event ends as cancelled, with the bytes
/// that went out so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_mid_body_cancels_the_event() {
    let captured = Captured::new();
    let app = Router::new()
        .route(
            "/endless",
            get(|| async { Body::new(Chunks::new(usize::MAX, Duration::from_millis(5))) }),
        )
        .layer(layer(&captured));
    let address = serve(app).await;
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    socket
        .write_all(b"GET /endless HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    // Read the head and the first chunk.
    let mut received = Vec::new();
    while !received.ends_with(b"xxxxxxxxxx\r\n") {
        let mut buffer = [0; 4096];
        let read = socket.read(&mut buffer).await.unwrap();
        assert_ne!(read, 0, "the server closed the connection");
        received.extend_from_slice(&buffer[..read]);
    }
    assert!(received.starts_with(b"HTTP/1.1 200 OK"));
    drop(socket);
    let event = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(event.outcome(), Outcome::Cancelled);
    assert_eq!(u64_of(&event, "http.response.status_code"), Some(200));
    let bytes = u64_of(&event, "http.response.body.size").unwrap();
    assert!(bytes >= 1000 && bytes % 1000 == 0, "counted {bytes} bytes");
}

/// A handler that panics: the event ends as panicked, the catch-panic layer outside answers 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_ends_the_event_as_panicked() {
    let captured = Captured::new();
    let app = Router::new()
        .route(
            "/panic",
            get(|| async {
                if std::hint::black_box(true) {
                    panic!("handler panicked on purpose");
                }
                "unreachable"
            }),
        )
        .layer(layer(&captured))
        .layer(CatchPanicLayer::new());
    let address = serve(app).await;
    assert_eq!(fetch(&client(), format!("http://{address}/panic"), &[]).await.0, 500);
    let event = captured.wait_for("request.http", 1).await.remove(0);
    assert_eq!(event.outcome(), Outcome::Panicked);
    assert_eq!(str_of(&event, "http.route"), Some("/panic"));
    assert_eq!(
        event.payload().get("http.response.status_code"),
        None,
        "no response came out of the layer"
    );
}

/// Headers only when asked; Authorization and Cookie redacted by default, the notifier's
/// redaction policy on the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_are_recorded_only_when_asked_and_secrets_never() {
    let captured = Captured::new();
    captured.notifier.set_redaction(
        Redaction::builder()
            .key("http.request.header.x-api-key")
            .build()
            .unwrap(),
    );
    let recorded = ServerLayer::new()
        .notifier(&captured.notifier)
        .name("recorded.http")
        .request_headers(Headers::All)
        .response_headers(Headers::Only(vec![
            http::header::CONTENT_TYPE,
            http::header::SET_COOKIE,
        ]));
    let app = Router::new()
        .route("/quiet", get(|| async { "q" }).layer(layer(&captured)))
        .route(
            "/loud",
            get(|| async { ([(http::header::SET_COOKIE, "session=abc")], "l") }).layer(recorded),
        );
    let address = serve(app).await;
    let client = client();
    let secrets = [
        ("authorization", "Bearer t0ken"),
        ("cookie", "session=abc"),
        ("x-api-key", "k3y"),
        ("x-trace-me", "yes"),
    ];
    fetch(&client, format!("http://{address}/quiet"), &secrets).await;
    fetch(&client, format!("http://{address}/loud"), &secrets).await;
    let quiet = captured.wait_for("request.http", 1).await.remove(0);
    let loud = captured.wait_for("recorded.http", 1).await.remove(0);
    assert!(
        quiet.payload().keys().all(|k| !k.contains("header")),
        "{:?}",
        quiet.payload()
    );
    assert_eq!(str_of(&loud, "http.request.header.authorization"), Some("[FILTERED]"));
    assert_eq!(str_of(&loud, "http.request.header.cookie"), Some("[FILTERED]"));
    assert_eq!(str_of(&loud, "http.request.header.x-api-key"), Some("[FILTERED]"));
    assert_eq!(str_of(&loud, "http.request.header.x-trace-me"), Some("yes"));
    assert_eq!(str_of(&loud, "http.response.header.set-cookie"), Some("[FILTERED]"));
    assert_eq!(
        str_of(&loud, "http.response.header.content-type"),
        Some("text/plain; charset=utf-8")
    );
    let text = format!("{:?}", loud.payload());
    for secret in ["t0ken", "k3y", "abc"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}

/// (event name, the `request_id` tag subscribers see when it finishes), in finish order.
type SeenTags = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// Issue 44 item 7: the request's own event carries the tags current when it started (Rails'
/// `event.tagged`), also when it ends inside a streamed body's poll, outside the request's scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i44_7_a_streamed_response_keeps_the_request_tags_on_its_own_event() {
    use notify_core::context::Tags;
    let captured = Captured::new();
    let seen: SeenTags = Default::default();
    let sink = seen.clone();
    let _s = captured.notifier.subscribe(
        notify_core::Pattern::all(),
        notify_core::Subscriber::event(move |e: &notify_core::Event| {
            let tag = Tags::current()
                .get("request_id")
                .and_then(|v| v.as_str().map(str::to_owned));
            sink.lock().unwrap().push((e.name().to_owned(), tag));
        }),
    );
    let n1 = captured.notifier.clone();
    let n2 = captured.notifier.clone();
    let app = Router::new()
        .route(
            "/one",
            get(move || async move {
                n1.instrument("query.sql", Payload::new, |_| ());
                "one frame"
            }),
        )
        .route(
            "/stream",
            get(move || async move {
                n2.instrument("query.sql", Payload::new, |_| ());
                Body::new(Chunks::new(3, Duration::from_millis(5)))
            }),
        )
        .layer(layer(&captured))
        // Outermost: each request's tags, as a request-id middleware sets them.
        .layer(axum::middleware::from_fn(
            |request: axum::extract::Request, next: axum::middleware::Next| {
                let id = request.uri().path().trim_start_matches('/').to_owned();
                Tags::new().with("request_id", id).scope(next.run(request))
            },
        ));
    let address = serve(app).await;
    for path in ["one", "stream"] {
        seen.lock().unwrap().clear();
        let (status, body) = fetch(&client(), format!("http://{address}/{path}"), &[]).await;
        assert_eq!(status, 200);
        assert_eq!(body.len(), if path == "one" { 9 } else { 3_000 });
        // Both events are delivered by the time the body ended; wait for this subscriber's copy.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        let tag = Some(path.to_owned());
        assert_eq!(
            seen,
            [("query.sql".to_owned(), tag.clone()), ("request.http".to_owned(), tag)],
            "{path}"
        );
    }
}
