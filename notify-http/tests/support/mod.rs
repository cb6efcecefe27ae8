//! What the socket tests share: a real server on a free loopback port, a real client, and a
//! notifier whose events are kept.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use notify_core::{Event, Notifier, Pattern, Subscriber};

/// A notifier and the events it delivered, in finish order.
pub struct Captured {
    pub notifier: Notifier,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Captured {
    pub fn new() -> Captured {
        let notifier = Notifier::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        // The subscription lives as long as the notifier.
        let _ = notifier.subscribe(
            Pattern::all(),
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
        );
        Captured { notifier, events }
    }

    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    pub fn named(&self, name: &str) -> Vec<Event> {
        self.events().into_iter().filter(|e| e.name() == name).collect()
    }

    /// Waits (up to 10 s) until `count` events named `name` were delivered, and returns them.
    pub async fn wait_for(&self, name: &str, count: usize) -> Vec<Event> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let events = self.named(name);
            if events.len() >= count || Instant::now() > deadline {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Serves `app` on a free loopback port, on the test's runtime (it stops with the runtime, also
/// when the test fails).
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// GETs `uri` with `headers`, returns the status and the body as text.
pub async fn fetch(client: &HttpClient, uri: String, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = http::Request::get(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

pub fn str_of<'a>(event: &'a Event, key: &str) -> Option<&'a str> {
    event.payload().get(key).and_then(|v| v.as_str())
}

pub fn u64_of(event: &Event, key: &str) -> Option<u64> {
    event.payload().get(key).and_then(|v| v.as_u64())
}

/// A response body of `count` chunks of 1,000 bytes, `pause` before each (`usize::MAX`: a body
/// that does not end while anyone reads it).
pub struct Chunks {
    left: usize,
    pause: Duration,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Chunks {
    pub fn new(count: usize, pause: Duration) -> Chunks {
        Chunks {
            left: count,
            pause,
            sleep: None,
        }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::future::Future;
        use std::task::Poll;
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let pause = self.pause;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(pause)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        self.left -= 1;
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![b'x'; 1000])))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }
}
