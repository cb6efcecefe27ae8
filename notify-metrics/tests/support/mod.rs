//! What the RED metrics tests share: a real axum server with notify-http's `ServerLayer` on a
//! free loopback port, a real hyper client behind notify-http's `ClientLayer`, and the events the
//! notifier delivered.

#![allow(dead_code)]

pub mod prometheus;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use notify_core::{Event, Notifier, Pattern, Subscriber};
use notify_http::{ClientLayer, ClientService, ServerLayer};
use tower::{Layer, Service, ServiceExt};

/// A notifier and a copy of each event it delivered.
pub struct Captured {
    pub notifier: Notifier,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Captured {
    pub fn new() -> Captured {
        let notifier = Notifier::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let _ = notifier.subscribe(
            Pattern::all(),
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
        );
        Captured { notifier, events }
    }

    pub fn named(&self, name: &str) -> Vec<Event> {
        let events = self.events.lock().unwrap();
        events.iter().filter(|e| e.name() == name).cloned().collect()
    }
}

/// The application: `/books/{id}` (200 after `pause` ms given as `?ms=`, default 0), `/fail`
/// (500), behind a `ServerLayer` on `notifier` that finds axum's route template.
pub fn app(notifier: &Notifier) -> Router {
    Router::new()
        .route(
            "/books/{id}",
            get(|query: axum::extract::RawQuery| async move {
                let ms: u64 = query
                    .0
                    .and_then(|q| q.strip_prefix("ms=").and_then(|ms| ms.parse().ok()))
                    .unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                "a book"
            }),
        )
        .route("/fail", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "failed") }))
        .layer(
            ServerLayer::new()
                .notifier(notifier)
                .route_from(|parts| parts.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned())),
        )
}

/// Serves the application on a free loopback port on the test's runtime.
pub async fn serve(notifier: &Notifier) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app(notifier);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

pub type HttpClient = ClientService<Client<HttpConnector, Full<Bytes>>>;

/// A hyper client whose calls are notify-http client events on `notifier`.
pub fn client(notifier: &Notifier) -> HttpClient {
    ClientLayer::new()
        .notifier(notifier)
        .layer(Client::builder(TokioExecutor::new()).build_http())
}

/// GETs `uri`; the status.
pub async fn fetch(client: &HttpClient, uri: String) -> u16 {
    let request = axum::http::Request::get(uri).body(Full::new(Bytes::new())).unwrap();
    let mut client = client.clone();
    let response = client.ready().await.unwrap().call(request).await.unwrap();
    let status = response.status().as_u16();
    response.into_body().collect().await.unwrap();
    status
}

/// One exemplar of the exposition: the bucket line's series name, its labels (with `le`), and
/// the exemplar's labels and value.
#[derive(Debug, Clone)]
pub struct Exemplar {
    pub metric: String,
    pub labels: BTreeMap<String, String>,
    pub exemplar: BTreeMap<String, String>,
    pub value: f64,
}

/// `name="value",...` (values without escaped quotes, as in these tests) as a map.
fn labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let (value, after) = after.split_once('"').unwrap();
        out.insert(name.trim_start_matches(',').to_owned(), value.to_owned());
        rest = after;
    }
    out
}

/// The exemplars of an OpenMetrics text: `name{labels} count # {exemplar labels} value [time]`.
pub fn exemplars(text: &str) -> Vec<Exemplar> {
    text.lines()
        .filter_map(|line| {
            let (sample, exemplar) = line.split_once(" # ")?;
            let (metric, rest) = sample.split_once('{')?;
            let (series, _) = rest.rsplit_once('}')?;
            let exemplar = exemplar.strip_prefix('{')?;
            let (exemplar_labels, value) = exemplar.split_once("} ")?;
            let value = value.split(' ').next()?.parse().ok()?;
            Some(Exemplar {
                metric: metric.to_owned(),
                labels: labels(series),
                exemplar: labels(exemplar_labels),
                value,
            })
        })
        .collect()
}
