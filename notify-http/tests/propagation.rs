//! Issue 45: W3C Trace Context (Level 1 and 2) and W3C Baggage pass through a service whatever
//! listens. A real axum server with `ServerLayer` whose handler calls a second server (which
//! records the headers it receives) through hyper-util's client under `ClientLayer`, on
//! loopback, in four configurations: a subscriber on every name, on "request.http" only, on
//! "request.http_client" only, and nobody listening. The cases follow the processing models of
//! the two recommendations (receiving and sending `traceparent`, mutating `tracestate`,
//! propagating `baggage`).

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use notify_core::context::{self, Propagated};
use notify_core::trace_context::{self, TraceParent};
use notify_core::{Event, Notifier, Pattern, Subscriber};
use notify_http::{ClientLayer, ServerLayer, CLIENT_EVENT, SERVER_EVENT};
use support::{client, serve};
use tower::{ServiceBuilder, ServiceExt};

const TRACE: &str = "12345678901234567890123456789012";
const PARENT: &str = "1234567890123456";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listen {
    All,
    Server,
    Client,
    Nobody,
}

/// A notifier with the configuration's subscriber, and the events it got.
fn notifier(listen: Listen) -> (Notifier, Arc<Mutex<Vec<Event>>>) {
    let notifier = Notifier::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let subscriber = move || {
        let sink = sink.clone();
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone()))
    };
    let _ = match listen {
        Listen::All => Some(notifier.subscribe(Pattern::all(), subscriber())),
        Listen::Server => Some(notifier.subscribe(SERVER_EVENT, subscriber())),
        Listen::Client => Some(notifier.subscribe(CLIENT_EVENT, subscriber())),
        Listen::Nobody => None,
    };
    (notifier, events)
}

type Outgoing = notify_http::ClientService<Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>>;

/// The service under test and the server it calls.
struct Setup {
    front: SocketAddr,
    /// The headers each call reached the second server with.
    received: Arc<Mutex<Vec<HeaderMap>>>,
    events: Arc<Mutex<Vec<Event>>>,
}

/// The front service: `GET /front?n=<calls>` makes that many calls to the second server; the
/// handler answers with what it saw: `baggage k|tracestate`. `GET /set` sets baggage `added=yes`
/// on top of the request's before its one call.
async fn setup(listen: Listen) -> Setup {
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = received.clone();
    let back = Router::new().route(
        "/back",
        get(move |headers: HeaderMap| {
            sink.lock().unwrap().push(headers);
            async { "ok" }
        }),
    );
    let back = serve(back).await;
    let (notifier, events) = notifier(listen);
    let outgoing: Outgoing = ServiceBuilder::new()
        .layer(ClientLayer::new().notifier(&notifier))
        .service(Client::builder(TokioExecutor::new()).build_http());
    let call = move |outgoing: Outgoing| async move {
        let request = http::Request::get(format!("http://{back}/back"))
            .body(Empty::new())
            .unwrap();
        let response = outgoing.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    };
    let (o1, o2) = (outgoing.clone(), outgoing);
    let front = Router::new()
        .route(
            "/front",
            get(move |query: axum::extract::RawQuery| {
                let outgoing = o1.clone();
                async move {
                    let n: usize = query.0.and_then(|q| q.strip_prefix("n=")?.parse().ok()).unwrap_or(1);
                    for _ in 0..n {
                        call(outgoing.clone()).await;
                    }
                    format!(
                        "{}|{}",
                        context::baggage().get("k").unwrap_or("-"),
                        context::trace_state()
                    )
                }
            }),
        )
        .route(
            "/set",
            get(move || {
                let outgoing = o2.clone();
                async move {
                    let baggage = context::baggage().with("added", "yes").unwrap();
                    let scoped = Propagated::current().with_baggage(baggage);
                    scoped.scope(call(outgoing)).await;
                    "set"
                }
            }),
        )
        .layer(ServerLayer::new().notifier(&notifier).traceresponse(true));
    Setup {
        front: serve(front).await,
        received,
        events,
    }
}

impl Setup {
    /// GETs `path` with `headers`; the response's headers and body, and the headers of the calls
    /// the service made meanwhile.
    async fn request(&self, path: &str, headers: &[(&str, &str)]) -> (HeaderMap, String, Vec<HeaderMap>) {
        let before = self.received.lock().unwrap().len();
        let mut request = http::Request::get(format!("http://{}{path}", self.front));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = client()
            .request(request.body(Full::new(Bytes::new())).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let head = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let calls = self.received.lock().unwrap()[before..].to_vec();
        (head, String::from_utf8(body.to_vec()).unwrap(), calls)
    }
}

fn traceparent(headers: &HeaderMap) -> TraceParent {
    let values: Vec<_> = headers.get_all("traceparent").iter().collect();
    assert_eq!(values.len(), 1, "exactly one traceparent: {headers:?}");
    values[0].to_str().unwrap().parse().unwrap()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

async fn run(listen: Listen) {
    let s = setup(listen).await;
    let incoming = format!("00-{TRACE}-{PARENT}-01");

    // traceparent absent: a new trace, random flag set, sampled; each call its own parent id.
    let (head, _, calls) = s.request("/front?n=3", &[("tracestate", "foo=1")]).await;
    assert_eq!(calls.len(), 3);
    let parents: Vec<TraceParent> = calls.iter().map(traceparent).collect();
    assert!(parents.iter().all(|p| p.trace_id() == parents[0].trace_id()));
    assert_ne!(parents[0].trace_id().to_string(), TRACE);
    assert_eq!(parents[0].flags().bits(), 0x03, "sampled and random: {listen:?}");
    let mut ids: Vec<u64> = parents.iter().map(|p| p.parent_id().get()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3, "a distinct parent id per call");
    assert!(
        calls.iter().all(|c| c.get("tracestate").is_none()),
        "no traceparent: tracestate discarded"
    );
    let response = traceparent_of(&head, "traceresponse");
    assert_eq!(
        response.trace_id(),
        parents[0].trace_id(),
        "traceresponse names the new trace"
    );

    // A valid traceparent with tracestate and baggage: continued, parent id replaced, all three
    // passed on; the handler reads the baggage (decoded) and the tracestate.
    let headers = [
        ("traceparent", incoming.as_str()),
        ("tracestate", "foo=1,bar=2"),
        ("baggage", "k=v%20w;ttl=1, other=x"),
    ];
    let (head, body, calls) = s.request("/front?n=2", &headers).await;
    assert_eq!(body, "v w|foo=1,bar=2");
    for call in &calls {
        let p = traceparent(call);
        assert_eq!((p.trace_id().to_string(), p.flags().bits()), (TRACE.to_owned(), 0x01));
        assert_ne!(p.parent_id().to_string(), PARENT);
        assert_eq!(header(call, "tracestate"), Some("foo=1,bar=2"));
        assert_eq!(header(call, "baggage"), Some("k=v%20w;ttl=1,other=x"));
    }
    assert_ne!(traceparent(&calls[0]).parent_id(), traceparent(&calls[1]).parent_id());
    let response = traceparent_of(&head, "traceresponse");
    assert_eq!(
        (response.trace_id().to_string(), response.flags().bits()),
        (TRACE.to_owned(), 0x01)
    );

    // Level 2: the random flag is kept, unsampled stays unsampled; a future version is read by
    // its known fields and sent as 00.
    for (sent, flags) in [("00", 0x00), ("02", 0x02), ("03", 0x03)] {
        let (_, _, calls) = s
            .request("/front", &[("traceparent", &format!("00-{TRACE}-{PARENT}-{sent}"))])
            .await;
        assert_eq!(traceparent(&calls[0]).flags().bits(), flags, "{sent}");
    }
    let (_, _, calls) = s
        .request("/front", &[("TraceParent", &format!("cc-{TRACE}-{PARENT}-03-future"))])
        .await;
    let p = traceparent(&calls[0]);
    assert_eq!((p.trace_id().to_string(), p.flags().bits()), (TRACE.to_owned(), 0x03));

    // Malformed or duplicated traceparent: a new trace, the tracestate dropped, counted.
    let before = trace_context::stats();
    for bad in [
        vec![("traceparent", format!("00-{TRACE}-{PARENT}-0."))],
        vec![("traceparent", format!("ff-{TRACE}-{PARENT}-01"))],
        vec![("traceparent", format!("00-{}-{PARENT}-01", "0".repeat(32)))],
        vec![
            ("traceparent", incoming.clone()),
            ("traceparent", format!("00-{TRACE}-{PARENT}-00")),
        ],
    ] {
        let mut headers: Vec<(&str, &str)> = bad.iter().map(|(n, v)| (*n, v.as_str())).collect();
        headers.push(("tracestate", "foo=1"));
        let (_, _, calls) = s.request("/front", &headers).await;
        let p = traceparent(&calls[0]);
        assert_ne!(p.trace_id().to_string(), TRACE, "{bad:?}");
        assert!(p.flags().is_random());
        assert_eq!(header(&calls[0], "tracestate"), None);
    }
    let after = trace_context::stats();
    // Other tests of this binary extract concurrently: at least these four.
    assert!(after.rejected - before.rejected >= 4);

    // tracestate: a repeated key drops only the repeat; an invalid member drops the list.
    let (_, _, calls) = s
        .request(
            "/front",
            &[
                ("traceparent", &incoming),
                ("tracestate", "foo=1,foo=2"),
                ("tracestate", "a@b=3"),
            ],
        )
        .await;
    assert_eq!(header(&calls[0], "tracestate"), Some("foo=1,a@b=3"));
    let (_, _, calls) = s
        .request("/front", &[("traceparent", &incoming), ("tracestate", "foo=1,BAR=2")])
        .await;
    assert_eq!(header(&calls[0], "tracestate"), None);

    // Baggage set in the handler goes with its calls; invalid members are dropped alone.
    let (_, _, calls) = s
        .request("/set", &[("traceparent", &incoming), ("baggage", "k=1,bad key=2")])
        .await;
    assert_eq!(header(&calls[0], "baggage"), Some("k=1,added=yes"));

    // Who recorded what: the parent ids are the events' ids where there are events.
    let events = s.events.lock().unwrap().clone();
    let servers: Vec<&Event> = events.iter().filter(|e| e.name() == SERVER_EVENT).collect();
    let clients: Vec<&Event> = events.iter().filter(|e| e.name() == CLIENT_EVENT).collect();
    let (want_servers, want_clients) = match listen {
        Listen::All => (true, true),
        Listen::Server => (true, false),
        Listen::Client => (false, true),
        Listen::Nobody => (false, false),
    };
    assert_eq!((!servers.is_empty(), !clients.is_empty()), (want_servers, want_clients));
    let received = s.received.lock().unwrap().clone();
    let sent: Vec<u64> = received.iter().map(|h| traceparent(h).parent_id().get()).collect();
    for call in &clients {
        assert!(sent.contains(&call.id().get()), "a recorded call's id is its parent id");
    }
    for server in &servers {
        assert!(!sent.contains(&server.id().get()), "calls never reuse the request's id");
    }
    // The request's tracestate reaches the events of its trace (exporters read it there).
    for recorded in [&servers, &clients] {
        if !recorded.is_empty() {
            assert!(
                recorded.iter().any(|e| e.trace_state().as_str() == "foo=1,bar=2"),
                "{listen:?}"
            );
        }
    }
    if let Some(continued) = servers.iter().find(|e| e.trace_id().to_string() == TRACE) {
        assert!(continued.parent_is_remote());
        assert!(
            continued.payload().get("baggage.k").is_none(),
            "baggage is not recorded unless asked"
        );
    }
}

fn traceparent_of(headers: &HeaderMap, name: &str) -> TraceParent {
    header(headers, name).expect(name).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_5_propagation_with_a_subscriber_on_every_name() {
    run(Listen::All).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_5_propagation_with_a_subscriber_on_the_server_event_only() {
    run(Listen::Server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_5_propagation_with_a_subscriber_on_the_client_event_only() {
    run(Listen::Client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_5_propagation_with_nobody_listening() {
    run(Listen::Nobody).await;
}

/// The baggage keys a user names are recorded (`baggage.<key>`), and the notifier's redaction
/// policy applies to them; the others never reach the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i45_3_named_baggage_keys_are_recorded_and_redacted() {
    let (notifier, events) = notifier(Listen::All);
    notifier.set_redaction(
        notify_core::redaction::Redaction::builder()
            .key("baggage.secret")
            .build()
            .unwrap(),
    );
    let app = Router::new().route("/", get(|| async { "ok" })).layer(
        ServerLayer::new()
            .notifier(&notifier)
            .record_baggage(["tenant", "secret"]),
    );
    let address = serve(app).await;
    support::fetch(
        &client(),
        format!("http://{address}/"),
        &[("baggage", "tenant=acme,secret=hunter2,other=x")],
    )
    .await;
    let event = events.lock().unwrap()[0].clone();
    let payload = event.payload();
    assert_eq!(payload.get("baggage.tenant").and_then(|v| v.as_str()), Some("acme"));
    assert_ne!(payload.get("baggage.secret").and_then(|v| v.as_str()), Some("hunter2"));
    assert!(payload.get("baggage.secret").is_some());
    assert!(payload.get("baggage.other").is_none());
}
