//! [`WebServer`]: the pages and the JSON over HTTP/1 (hyper on tokio), with limits on what one
//! client can hold.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, TcpListener as StdTcpListener, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

use notify_core::TraceId;

use crate::html::{render_index, render_trace};
use crate::json::{stats_json, trace_json, traces_json};
use crate::options::WebOptions;
use crate::recorder::TraceRecorder;

/// The cookie that carries the token once a request gave it as `?token=`.
const TOKEN_COOKIE: &str = "notify_web_token";

/// What the token cookie's value percent-encodes: the bytes RFC 6265 keeps out of a cookie value
/// (controls, space, `"`, `,`, `;`, `\\`), `%` itself, and every non-ASCII byte.
const COOKIE_ESCAPED: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b',').add(b';').add(b'\\').add(b'%');

/// Scripts are refused outright: the pages use none, so an injected one could not run even if
/// escaping failed.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'";

/// How long a connection writing a response must have written nothing to be closed for a new one
/// when [`WebOptions::max_connections`] are open (a connection waiting for a request head counts
/// as stalled since it began waiting, however recently it sent a byte: see [`stalled_since`]).
const EVICTABLE_AFTER: Duration = Duration::from_millis(100);

/// The most threads [`WebServer::start`]'s runtime renders pages on at once (tokio's blocking
/// pool: started when needed, ended after 10 s idle).
const RENDER_THREADS: usize = 4;

/// [`Connection::response_deadline`] while the response is being rendered: no deadline.
const RENDERING: u64 = u64::MAX;

/// Responses up to this many bytes are always served; larger ones share
/// [`WebOptions::response_memory`].
const SMALL_RESPONSE: usize = 1024 * 1024;

/// The largest request head read: the request line, the headers and the blank line that ends
/// them, in bytes. hyper answers `431` past it (`max_header_size`, which counts the head exactly;
/// `max_buf_size` alone bounds only its read buffer, which one read can take past this).
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The first and the longest pause of the accept loop after an accept error (file descriptors
/// exhausted, say); it doubles in between and starts over after a success.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_millis(100));

/// What a [`WebServer`] has served and refused, counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerCounts {
    /// Connections accepted and served (evicted ones included).
    pub accepted: u64,
    /// Connections open now.
    pub open_connections: usize,
    /// Requests answered (any status).
    pub requests: u64,
    /// New connections closed at once because [`WebOptions::max_connections`] were open and
    /// none of them could be evicted: every one was having its page rendered or writing a
    /// response it had written to within the last 100 ms.
    pub refused_connections: u64,
    /// Open connections closed to make room for a new one past
    /// [`WebOptions::max_connections`]: the one stalled longest, a connection waiting for a
    /// request head being stalled since it began waiting (bytes trickled into the head count for
    /// nothing), one writing a response since its last byte written (if 100 ms ago). See
    /// [`WebServer`]'s "Connection limit".
    pub evicted_connections: u64,
    /// Errors of the listening socket's accept (`EMFILE`: file descriptors exhausted, and the
    /// like): the server paused (5 ms, doubling up to 100 ms) and went on accepting.
    pub accept_errors: u64,
    /// Connections closed because a request's head did not arrive within
    /// [`WebOptions::header_read_timeout`].
    pub header_timeouts: u64,
    /// Requests answered `431 Request Header Fields Too Large` (by hyper, the connection then
    /// closed): a request head (request line, headers and the blank line) over 64 KiB, or with
    /// more than 100 headers.
    pub too_large_heads: u64,
    /// Connections closed after [`WebOptions::idle_timeout`] without a byte either way.
    pub idle_timeouts: u64,
    /// Connections closed because a response was not written whole within
    /// [`WebOptions::response_timeout`].
    pub response_timeouts: u64,
    /// Requests answered `413 Payload Too Large` ([`WebOptions::max_request_body`]).
    pub too_large: u64,
    /// Requests answered `503 Service Unavailable` because large responses being written to
    /// other clients held [`WebOptions::response_memory`].
    pub busy: u64,
    /// Bytes of large responses (over 1 MiB) being written now.
    pub large_response_bytes: usize,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    requests: AtomicU64,
    refused_connections: AtomicU64,
    evicted_connections: AtomicU64,
    accept_errors: AtomicU64,
    header_timeouts: AtomicU64,
    too_large_heads: AtomicU64,
    idle_timeouts: AtomicU64,
    response_timeouts: AtomicU64,
    too_large: AtomicU64,
    busy: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What the server's tasks share.
struct Shared {
    recorder: TraceRecorder,
    epoch: Instant,
    counters: Counters,
    /// The open connections by id.
    connections: Mutex<HashMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
    /// The bytes of the large responses (over [`SMALL_RESPONSE`]) being written now.
    large_in_flight: AtomicUsize,
}

impl Shared {
    fn options(&self) -> &WebOptions {
        self.recorder.options()
    }

    /// Nanoseconds since the server started (never 0: 0 means "none" in [`Connection`]).
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Counts a large response of `len` bytes for `connection`, or refuses it: when other large
    /// responses are in flight and it would take them past [`WebOptions::response_memory`].
    fn hold(&self, connection: &Connection, len: usize) -> bool {
        let budget = self.options().response_memory;
        let admitted = self
            .large_in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held == 0 || held.saturating_add(len) <= budget).then_some(held + len)
            })
            .is_ok();
        if admitted {
            connection.holding.fetch_add(len, Ordering::AcqRel);
        }
        admitted
    }

    /// The response of `connection` is written (or will never be): its bytes are released.
    fn release(&self, connection: &Connection) {
        let held = connection.holding.swap(0, Ordering::AcqRel);
        if held > 0 {
            self.large_in_flight.fetch_sub(held, Ordering::AcqRel);
        }
    }

    fn at(&self, nanos: u64) -> Instant {
        self.epoch + Duration::from_nanos(nanos)
    }
}

/// One open connection's clocks (nanoseconds since the server started) and its eviction signal.
struct Connection {
    /// When a byte was last read or written.
    last_progress: AtomicU64,
    /// When it started waiting for the request head it waits for now (accepted, or its previous
    /// response written whole): its progress, as [`admit`] measures it, is whole requests, so
    /// bytes trickled into a head never make it newer. Meaningful while `response_deadline` is 0.
    awaiting_head_since: AtomicU64,
    /// When the response in flight must be written by; 0 when none is.
    response_deadline: AtomicU64,
    /// Set when hyper dropped the response in flight's body: the response is written once the
    /// next flush completes.
    body_taken: AtomicBool,
    /// Notified to close the connection (evicted).
    close: Notify,
    /// The bytes of a large response in flight counted in [`Shared::large_in_flight`]; 0 when
    /// none is.
    holding: AtomicUsize,
}

/// Why a connection was closed by its watchdog.
enum Expired {
    Idle,
    Response,
}

impl Connection {
    fn new(now: u64) -> Connection {
        Connection {
            last_progress: AtomicU64::new(now),
            awaiting_head_since: AtomicU64::new(now),
            response_deadline: AtomicU64::new(0),
            body_taken: AtomicBool::new(false),
            close: Notify::new(),
            holding: AtomicUsize::new(0),
        }
    }

    /// When the watchdog must look again, in the server's nanoseconds.
    fn deadline(&self, options: &WebOptions) -> u64 {
        match self.response_deadline.load(Ordering::Acquire) {
            0 => self
                .last_progress
                .load(Ordering::Acquire)
                .saturating_add(nanos(options.idle_timeout)),
            deadline => deadline,
        }
    }

    fn expired(&self, options: &WebOptions, now: u64) -> Option<Expired> {
        if now < self.deadline(options) {
            None
        } else if self.response_deadline.load(Ordering::Acquire) != 0 {
            Some(Expired::Response)
        } else {
            Some(Expired::Idle)
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A connection's socket, noting each byte read or written and when a response is written whole.
struct Watched {
    stream: TcpStream,
    connection: Arc<Connection>,
    shared: Arc<Shared>,
}

impl Watched {
    fn progress(&self) {
        self.connection
            .last_progress
            .store(self.shared.now(), Ordering::Release);
    }
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.progress();
        }
        poll
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut TaskContext<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.stream).poll_write(cx, data);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.progress();
        }
        poll
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.progress();
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.stream).poll_flush(cx);
        // hyper flushes once its buffer is written out: after the body was taken, that is the
        // whole response.
        if matches!(poll, Poll::Ready(Ok(()))) && this.connection.body_taken.swap(false, Ordering::AcqRel) {
            // Waiting for the next request head from now (set before the deadline is cleared:
            // `admit` reads the deadline first).
            this.connection
                .awaiting_head_since
                .store(this.shared.now(), Ordering::Release);
            this.connection.response_deadline.store(0, Ordering::Release);
            this.shared.release(&this.connection);
        }
        poll
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A response body that tells its connection when hyper has taken it (dropped it).
struct TrackedBody {
    inner: Full<Bytes>,
    connection: Arc<Connection>,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        self.connection.body_taken.store(true, Ordering::Release);
    }
}

/// Serves a [`TraceRecorder`] over HTTP/1 until dropped or [`stop`](WebServer::stop)ped.
///
/// Paths: `/` (recent traces, per-name table, latency chart), `/trace/<trace id>` (waterfall;
/// `?open=<event id>` opens that event's payload),
/// `/api/traces`, `/api/trace/<trace id>`, `/api/stats` (JSON). Only `GET` and `HEAD`; other
/// methods get 405, an unknown path 404, a malformed trace id 400 (quoting an
/// [`Excerpt`](notify_core::escape::Excerpt) of it: at most 64 characters and its length, never
/// the whole path). Responses carry a Content-Security-Policy that allows no script.
///
/// With [`WebOptions::token`](crate::WebOptions::token) every request must carry the token: as
/// `?token=...` (URL-encoded as a form field is: `%2B` for `+`, `+` or `%20` for a space; the
/// response then sets an HttpOnly, SameSite=Strict cookie, percent-encoded, so the page's links
/// work), as that cookie, or as `Authorization: Bearer ...` (the token as it is); otherwise it
/// gets 401. The comparison takes the same time whatever the bytes (only the length can show).
///
/// It is [hyper](https://docs.rs/hyper)'s HTTP/1 server on a tokio runtime, each connection its
/// own task, so one client cannot hold up another. What one client can take is bounded (see
/// [`WebOptions`] for each, and [`ServerCounts`] for what was refused):
///
/// | limit | default | past it |
/// |---|---|---|
/// | [`max_request_body`](WebOptions::max_request_body) | 16 KiB | `413`, connection closed, the body never read |
/// | [`header_read_timeout`](WebOptions::header_read_timeout) | 10 s | connection closed |
/// | [`idle_timeout`](WebOptions::idle_timeout) | 30 s | connection closed |
/// | [`response_timeout`](WebOptions::response_timeout) | 30 s | connection closed |
/// | [`max_connections`](WebOptions::max_connections) | 256 | the one that made the least progress closed (below), else the new one |
/// | [`response_memory`](WebOptions::response_memory) | 256 MiB of responses over 1 MiB being written | `503` with `Retry-After: 1` |
/// | request head: line, headers and the blank line | 65,536 bytes (exactly), 100 headers | `431` (hyper), connection closed |
///
/// # Connection limit: progress is whole requests, not bytes
///
/// A connection is admitted at once while fewer than `max_connections` are open. At the limit, a
/// new one takes the place of the open connection stalled the longest, counted in
/// [`ServerCounts::evicted_connections`]:
///
/// * one waiting for a request head (reading one, or idle between requests) is stalled since it
///   began waiting for it. Bytes of a head that has not arrived whole count for nothing: a client
///   that trickles its head a byte at a time (slowloris) is as stalled as one that sends nothing,
///   while a legitimate client, which sends its head in one go, waits for it a round trip. So
///   however many connections trickle, and however fast they come back when closed, a new
///   connection gets a place and its request is answered: each newcomer closes the oldest
///   waiter, so a connection is closed only once every other waiting one is newer, and a flood
///   must open about `max_connections` connections in the round trip a client's head takes to
///   push it out;
/// * one writing a response is stalled since it last wrote a byte, and only counts once that is
///   100 ms ago (a client that does not read);
/// * one whose page is being rendered is never closed for another.
///
/// When no open connection can be closed (all rendering, or writing), the new one is closed at
/// once, counted in [`ServerCounts::refused_connections`].
///
/// This is nginx's choice when it runs out of connections (it closes idle keep-alive
/// connections, oldest first), taken further: a connection trickling its head is idle as far as
/// the server can tell. Below the limit, [`header_read_timeout`](WebOptions::header_read_timeout)
/// (hyper's) closes a head that has not arrived whole in 10 s, whatever its rate.
///
/// An accept error (`EMFILE` when file descriptors run out) pauses accepting (5 ms, doubling up
/// to 100 ms) and never ends the server.
///
/// ```
/// use notify_web::{TraceRecorder, WebOptions, WebServer};
/// let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new()))?;
/// assert!(server.local_addr().ip().is_loopback());
/// server.stop();
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct WebServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl WebServer {
    /// Binds `addr` (use `127.0.0.1:PORT` to stay local, port 0 for any free port) and serves
    /// `recorder` on a thread named `notify-web` running a single-threaded tokio runtime of its
    /// own (whether or not the caller runs tokio: it never takes the host's workers, and needs
    /// nothing of the caller); pages are rendered on up to 4 more threads (`notify-web-render`,
    /// started when needed and ended after 10 s idle), so a large trace being rendered does not
    /// hold up other requests. Dropping the server stops it and joins the thread.
    ///
    /// # Errors
    /// The operating system's error when the address cannot be bound, the runtime not built or
    /// the thread not spawned.
    pub fn start(addr: impl ToSocketAddrs, recorder: TraceRecorder) -> io::Result<WebServer> {
        let (listener, addr) = bind(addr)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .thread_name("notify-web-render")
            .max_blocking_threads(RENDER_THREADS)
            .build()?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (stop, stopped) = watch::channel(false);
        let shared = new_shared(recorder);
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("notify-web".to_owned())
            .spawn(move || runtime.block_on(accept_loop(serving, listener, stopped)))?;
        Ok(WebServer {
            shared,
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// As [`WebServer::start`], on the tokio runtime of `runtime` instead of a thread of its own
    /// (a host that runs tokio already; pages are rendered on its blocking pool). Dropping the
    /// server tells its tasks to end; it does not wait for them.
    ///
    /// # Errors
    /// The operating system's error when the address cannot be bound.
    ///
    /// # Panics
    /// When `runtime` has no IO or no time driver (build it with `enable_all`, as
    /// `#[tokio::main]` does).
    pub fn start_on(
        runtime: &tokio::runtime::Handle,
        addr: impl ToSocketAddrs,
        recorder: TraceRecorder,
    ) -> io::Result<WebServer> {
        let (listener, addr) = bind(addr)?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (stop, stopped) = watch::channel(false);
        let shared = new_shared(recorder);
        runtime.spawn(accept_loop(shared.clone(), listener, stopped));
        Ok(WebServer {
            shared,
            addr,
            stop,
            thread: None,
        })
    }

    /// The address it listens on (with the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it has served and refused so far.
    pub fn counts(&self) -> ServerCounts {
        let c = &self.shared.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ServerCounts {
            accepted: get(&c.accepted),
            open_connections: self.shared.connections.lock().len(),
            requests: get(&c.requests),
            refused_connections: get(&c.refused_connections),
            evicted_connections: get(&c.evicted_connections),
            accept_errors: get(&c.accept_errors),
            header_timeouts: get(&c.header_timeouts),
            too_large_heads: get(&c.too_large_heads),
            idle_timeouts: get(&c.idle_timeouts),
            response_timeouts: get(&c.response_timeouts),
            too_large: get(&c.too_large),
            busy: get(&c.busy),
            large_response_bytes: self.shared.large_in_flight.load(Ordering::Acquire),
        }
    }

    /// Stops accepting, closes its connections and joins the thread (what dropping it does too).
    pub fn stop(self) {}
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn bind(addr: impl ToSocketAddrs) -> io::Result<(StdTcpListener, SocketAddr)> {
    let listener = StdTcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

fn new_shared(recorder: TraceRecorder) -> Arc<Shared> {
    Arc::new(Shared {
        recorder,
        epoch: Instant::now(),
        counters: Counters::default(),
        connections: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        large_in_flight: AtomicUsize::new(0),
    })
}

/// Accepts until told to stop; an accept error pauses it, never ends it.
async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff = ACCEPT_BACKOFF.0;
                admit(&shared, stream, &stop);
            }
            Err(_) => {
                // EMFILE / ENFILE / ENOBUFS, or a connection aborted before it was accepted:
                // wait a little (the pending connection stays queued) and go on.
                bump(&shared.counters.accept_errors);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stop.changed() => return,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
            }
        }
    }
}

/// Serves `stream` on a task of its own, within [`WebOptions::max_connections`]: at the limit,
/// the open connection that has made the least progress is closed for it (see [`stalled_since`]),
/// or, when none can be, the new one is.
fn admit(shared: &Arc<Shared>, stream: TcpStream, stop: &watch::Receiver<bool>) {
    let now = shared.now();
    let connection = Arc::new(Connection::new(now));
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    {
        let mut open = shared.connections.lock();
        if open.len() >= shared.options().max_connections {
            let least_progress = open
                .iter()
                .filter_map(|(id, c)| stalled_since(c, now).map(|since| (*id, since)))
                .min_by_key(|(_, since)| *since);
            match least_progress {
                Some((stalled_id, _)) => {
                    let evicted = open.remove(&stalled_id).expect("listed");
                    evicted.close.notify_one();
                    bump(&shared.counters.evicted_connections);
                }
                None => {
                    bump(&shared.counters.refused_connections);
                    return; // dropping the stream closes it
                }
            }
        }
        open.insert(id, connection.clone());
    }
    bump(&shared.counters.accepted);
    tokio::spawn(serve_connection(shared.clone(), stream, id, connection, stop.clone()));
}

/// Since when `connection` has made no progress, if it may be closed for a new connection
/// (`None`: it may not). The earliest is closed first.
///
/// * Waiting for a request head (between requests, or reading one): progress is a whole request,
///   so it is stalled since it started waiting for this head, however many bytes of it arrived
///   since. A client sends a head in one go, and its connection waits for it for a round trip;
///   one that trickles a head (slowloris) is stalled from its first byte, and is the first to go
///   when the limit is reached, however often it sends a byte. An idle keep-alive connection
///   goes the same way (nginx too closes idle keep-alive connections first when it runs out of
///   connections); its client opens a new one.
/// * Its page being rendered: busy, never closed for another.
/// * Writing a response: progress is a byte written, so it is stalled since the last one; closed
///   only once stalled for 100 ms ([`EVICTABLE_AFTER`]): a slow reader, not a page on its way.
fn stalled_since(connection: &Connection, now: u64) -> Option<u64> {
    match connection.response_deadline.load(Ordering::Acquire) {
        0 => Some(connection.awaiting_head_since.load(Ordering::Acquire)),
        RENDERING => None,
        _ => {
            let last = connection.last_progress.load(Ordering::Acquire);
            (now.saturating_sub(last) >= nanos(EVICTABLE_AFTER)).then_some(last)
        }
    }
}

/// One connection: hyper's HTTP/1 state machine, under a watchdog for the idle and response
/// timeouts, until it ends, times out, is evicted or the server stops.
async fn serve_connection(
    shared: Arc<Shared>,
    stream: TcpStream,
    id: u64,
    connection: Arc<Connection>,
    mut stop: watch::Receiver<bool>,
) {
    let io = TokioIo::new(Watched {
        stream,
        connection: connection.clone(),
        shared: shared.clone(),
    });
    let service = {
        let (shared, connection) = (shared.clone(), connection.clone());
        service_fn(move |request: Request<Incoming>| {
            let (shared, connection) = (shared.clone(), connection.clone());
            let rendering_shared = shared.clone();
            async move {
                // No timeout while the page is rendered (what it takes is bounded by what the
                // recorder holds); `respond` starts the response timeout.
                connection.response_deadline.store(RENDERING, Ordering::Release);
                // Rendering a large trace takes a while: off the runtime's thread, so the
                // other connections are served meanwhile.
                let rendering = connection.clone();
                let rendered =
                    tokio::task::spawn_blocking(move || respond(&rendering_shared, &rendering, &request)).await;
                Ok::<_, Infallible>(rendered.unwrap_or_else(|_| internal_error(&shared, connection)))
            }
        })
    };
    let options = shared.options();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_HEAD_BYTES)
        .title_case_headers(true);
    let served = builder.serve_connection(io, service);
    let mut served = std::pin::pin!(served);
    loop {
        // Look again at the deadline, or sooner: a response set in flight meanwhile (from
        // another thread) has a deadline at least `response_timeout` away.
        let now = shared.now();
        let deadline = shared.at(connection
            .deadline(options)
            .min(now.saturating_add(nanos(options.response_timeout))));
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    if e.is_timeout() {
                        bump(&shared.counters.header_timeouts);
                    } else if e.is_parse_too_large() {
                        bump(&shared.counters.too_large_heads);
                    }
                }
                break;
            }
            _ = tokio::time::sleep_until(deadline.into()) => {
                match connection.expired(options, shared.now()) {
                    Some(Expired::Idle) => bump(&shared.counters.idle_timeouts),
                    Some(Expired::Response) => bump(&shared.counters.response_timeouts),
                    None => continue, // progress moved the deadline
                }
                break;
            }
            _ = connection.close.notified() => break, // evicted (counted by `admit`)
            _ = stop.changed() => break,
        }
    }
    shared.release(&connection);
    shared.connections.lock().remove(&id);
}

/// The answer when rendering a page panicked (a bug): the server goes on.
fn internal_error(shared: &Shared, connection: Arc<Connection>) -> Response<TrackedBody> {
    start_response_timeout(shared, &connection);
    let mut response = Response::new(TrackedBody {
        inner: Full::new(Bytes::from_static(b"500 Internal Server Error\n")),
        connection,
    });
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// What one request gets: status, content type, body.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body,
        }
    }

    fn json(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body,
        }
    }

    fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}

fn respond(shared: &Shared, connection: &Arc<Connection>, request: &Request<Incoming>) -> Response<TrackedBody> {
    bump(&shared.counters.requests);
    let options = shared.options();
    let (path, query) = (request.uri().path(), request.uri().query().unwrap_or(""));
    let mut set_cookie = None;
    // The body is never read: one declared too large (or of unknown length) is refused before
    // anything else, and hyper closes the connection rather than drain it.
    let hint = request.body().size_hint();
    let too_large =
        hint.lower() > options.max_request_body || hint.upper().is_none_or(|upper| upper > options.max_request_body);
    let reply = if too_large {
        bump(&shared.counters.too_large);
        Reply::text(
            413,
            format!(
                "413 Payload Too Large: this server takes no request body over {} bytes\n",
                options.max_request_body
            ),
        )
    } else {
        match authorize(&shared.recorder, request, query) {
            Auth::Denied => Reply::text(
                401,
                "401 Unauthorized: this page needs its token (?token=... or Authorization: Bearer ...)\n",
            ),
            auth => {
                if let Auth::ByQuery(token) = auth {
                    let value = utf8_percent_encode(&token, COOKIE_ESCAPED);
                    set_cookie = Some(format!("{TOKEN_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/"));
                }
                match *request.method() {
                    Method::GET | Method::HEAD => route(&shared.recorder, path, query),
                    _ => Reply::text(405, "405 Method Not Allowed: only GET and HEAD\n"),
                }
            }
        }
    };
    let head = request.method() == Method::HEAD;
    let mut reply = reply;
    if !head && reply.body.len() > SMALL_RESPONSE && !shared.hold(connection, reply.body.len()) {
        bump(&shared.counters.busy);
        reply = Reply::text(
            503,
            "503 Service Unavailable: large responses to other clients are being written; retry shortly\n",
        );
    }
    let body = if head { Bytes::new() } else { Bytes::from(reply.body) };
    let mut response = Response::new(TrackedBody {
        inner: Full::new(body),
        connection: connection.clone(),
    });
    *response.status_mut() = StatusCode::from_u16(reply.status).expect("a valid status");
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if reply.status == 405 {
        headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    if reply.status == 503 {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    if too_large {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if let Some(cookie) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    start_response_timeout(shared, connection);
    response
}

/// The response timeout runs from here, the page rendered, until the response is written whole.
fn start_response_timeout(shared: &Shared, connection: &Connection) {
    connection.body_taken.store(false, Ordering::Release);
    connection.response_deadline.store(
        shared.now().saturating_add(nanos(shared.options().response_timeout)),
        Ordering::Release,
    );
}

fn route(recorder: &TraceRecorder, path: &str, query: &str) -> Reply {
    match path {
        "/" | "/index.html" => Reply::html(render_index(recorder)),
        "/api/traces" => Reply::json(traces_json(recorder)),
        "/api/stats" => Reply::json(stats_json(recorder)),
        _ => {
            let (id, json) = if let Some(id) = path.strip_prefix("/trace/") {
                (id, false)
            } else if let Some(id) = path.strip_prefix("/api/trace/") {
                (id, true)
            } else {
                return Reply::text(404, "404 Not Found\n");
            };
            let trace_id: TraceId = match id.parse() {
                Ok(id) => id,
                Err(e) => return Reply::text(400, format!("400 Bad Request: {e}\n")),
            };
            match recorder.trace(trace_id) {
                Some(trace) if json => Reply::json(trace_json(&trace)),
                Some(trace) => {
                    let open = query_values(query, "open").find_map(|id| crate::json::SpanId::parse(&id));
                    Reply::html(render_trace(&trace, open))
                }
                None => Reply::text(404, format!("404 Not Found: no trace {trace_id} is kept\n")),
            }
        }
    }
}

enum Auth {
    Open,
    Denied,
    Granted,
    ByQuery(String),
}

fn authorize(recorder: &TraceRecorder, request: &Request<Incoming>, query: &str) -> Auth {
    let Some(expected) = recorder.options().token.as_deref() else {
        return Auth::Open;
    };
    let matches = |given: &str| bool::from(given.as_bytes().ct_eq(expected.as_bytes()));
    for given in query_values(query, "token") {
        if matches(&given) {
            return Auth::ByQuery(given.into_owned());
        }
    }
    for value in request.headers().get_all(header::AUTHORIZATION) {
        let Ok(value) = value.to_str() else { continue };
        if let Some(given) = value.strip_prefix("Bearer ") {
            if matches(given.trim()) {
                return Auth::Granted;
            }
        }
    }
    for value in request.headers().get_all(header::COOKIE) {
        let Ok(value) = value.to_str() else { continue };
        for cookie in value.split(';') {
            if let Some(given) = cookie
                .trim()
                .strip_prefix(TOKEN_COOKIE)
                .and_then(|c| c.strip_prefix('='))
            {
                // Written percent-encoded (see `respond`); a cookie set by hand may be plain.
                let decoded = percent_decode_str(given).decode_utf8_lossy();
                if matches(&decoded) {
                    return Auth::Granted;
                }
            }
        }
    }
    Auth::Denied
}

/// The values of the query parameter `key`, decoded as an HTML form's fields are
/// (`application/x-www-form-urlencoded`: `%XX` escapes, `+` for a space).
fn query_values<'q>(query: &'q str, key: &'q str) -> impl Iterator<Item = std::borrow::Cow<'q, str>> + 'q {
    form_urlencoded::parse(query.as_bytes()).filter_map(move |(k, v)| (k == key).then_some(v))
}
