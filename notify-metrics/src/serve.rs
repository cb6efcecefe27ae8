//! The scrape endpoint: `GET /metrics` over HTTP/1 (hyper), on a thread of its own running a
//! single-threaded tokio runtime, so a scrape never runs on the application's threads.

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// The content type of the exposition: OpenMetrics text 1.0.0, the format that carries exemplars.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Connections served at once; beyond, a new one is closed at once (counted).
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A request head larger than this is refused by hyper.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// What the endpoint has done, counted.
#[derive(Debug, Default)]
pub(crate) struct ServeCounts {
    pub(crate) scrapes: AtomicU64,
    pub(crate) not_found: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) accept_errors: AtomicU64,
}

/// The running endpoint: stops and joins its thread when dropped.
pub(crate) struct Endpoint {
    pub(crate) addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `addr` and serves `render()` at `/metrics` from a thread named
    /// `notify-metrics-http`.
    pub(crate) fn start(
        addr: impl ToSocketAddrs,
        render: Arc<dyn Fn() -> String + Send + Sync>,
        counts: Arc<ServeCounts>,
    ) -> io::Result<Endpoint> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("notify-metrics-http".to_owned())
            .spawn(move || runtime.block_on(accept_loop(listener, render, counts, stopped)))?;
        Ok(Endpoint {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    counts: Arc<ServeCounts>,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // pending one stays queued; try again shortly.
                counts.accept_errors.fetch_add(1, Ordering::Relaxed);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    _ = stop.changed() => return,
                }
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            counts.refused_connections.fetch_add(1, Ordering::Relaxed);
            continue; // dropping the stream closes it
        };
        let (render, counts, mut stop) = (render.clone(), counts.clone(), stop.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |request: Request<Incoming>| {
                let response = respond(&request, &*render, &counts);
                async move { Ok::<_, Infallible>(response) }
            });
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = stop.changed() => {}
            }
        });
    }
}

/// `GET` or `HEAD /metrics`: the exposition; another path: 404; another method: 405.
fn respond(request: &Request<Incoming>, render: &dyn Fn() -> String, counts: &ServeCounts) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    };
    if request.uri().path() != "/metrics" {
        counts.not_found.fetch_add(1, Ordering::Relaxed);
        return plain(StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    counts.scrapes.fetch_add(1, Ordering::Relaxed);
    let body = if request.method() == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(render())
    };
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(OPENMETRICS_CONTENT_TYPE),
    );
    response
}
