//! [`WebOptions`]: how much the recorder keeps and who may read the page.

use std::time::Duration;

use notify_export::TailSampling;

use crate::record::TraceEvent;

/// What a [`TraceRecorder`](crate::TraceRecorder) keeps and how its page is guarded.
///
/// Memory is bounded by counts: at most [`traces`](WebOptions::traces) finished traces plus
/// [`pending_traces`](WebOptions::pending_traces) unfinished ones, each of at most
/// [`events_per_trace`](WebOptions::events_per_trace) events, each taking at most
/// [`WebOptions::bytes_per_event`] bytes (its fixed part plus its payload text, capped at
/// [`payload_bytes`](WebOptions::payload_bytes)). The per-name statistics take one histogram per
/// name and time slot (a few KiB each, see [`WebOptions::slots`]), for at most
/// [`names`](WebOptions::names) names; a name leaves them once its newest event left the window.
///
/// ```
/// use notify_web::WebOptions;
/// use std::time::Duration;
/// let options = WebOptions::new().traces(50).window(Duration::from_secs(30)).token("s3cret");
/// assert_eq!(options.max_traces(), 50);
/// assert!(options.bytes_per_event() <= 1024 + 160);
/// ```
#[derive(Clone)]
pub struct WebOptions {
    pub(crate) traces: usize,
    pub(crate) pending_traces: usize,
    pub(crate) events_per_trace: usize,
    pub(crate) payload_bytes: usize,
    pub(crate) window: Duration,
    pub(crate) slots: usize,
    pub(crate) names: usize,
    pub(crate) remote_root_wait: Duration,
    pub(crate) token: Option<String>,
    pub(crate) refresh: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) response_timeout: Duration,
    pub(crate) max_request_body: u64,
    pub(crate) response_memory: usize,
    pub(crate) tail: Option<TailSampling>,
}

/// Every setting, the token only as `Some("<redacted>")`: options get logged, the token is a secret.
///
/// ```
/// let options = notify_web::WebOptions::new().token("s3cret");
/// let debug = format!("{options:?}");
/// assert!(debug.contains("token: Some(\"<redacted>\")") && !debug.contains("s3cret"));
/// ```
impl std::fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebOptions")
            .field("traces", &self.traces)
            .field("pending_traces", &self.pending_traces)
            .field("events_per_trace", &self.events_per_trace)
            .field("payload_bytes", &self.payload_bytes)
            .field("window", &self.window)
            .field("slots", &self.slots)
            .field("names", &self.names)
            .field("remote_root_wait", &self.remote_root_wait)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("refresh", &self.refresh)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("max_request_body", &self.max_request_body)
            .field("response_memory", &self.response_memory)
            .field("tail_sampling", &self.tail)
            .finish()
    }
}

impl Default for WebOptions {
    fn default() -> WebOptions {
        WebOptions {
            traces: 100,
            pending_traces: 1024,
            events_per_trace: 10_000,
            payload_bytes: 1024,
            window: Duration::from_secs(60),
            slots: 30,
            names: 1000,
            remote_root_wait: Duration::from_secs(1),
            token: None,
            refresh: Some(Duration::from_secs(5)),
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(30),
            max_request_body: 16 * 1024,
            response_memory: 256 * 1024 * 1024,
            tail: None,
        }
    }
}

impl WebOptions {
    /// The defaults: 100 finished traces, 1,024 unfinished ones, 10,000 events per trace, 1,024
    /// bytes of payload text per event, statistics of at most 1,000 names over the last 60 s in
    /// 30 slots of 2 s, no token, the index page reloading itself every 5 s.
    pub fn new() -> WebOptions {
        WebOptions::default()
    }

    /// Keeps the last `count` finished traces (at least 1); older ones are forgotten.
    pub fn traces(mut self, count: usize) -> WebOptions {
        self.traces = count.max(1);
        self
    }

    /// Holds at most `count` unfinished traces (at least 1): past that the oldest is dropped and
    /// its events counted in [`RecorderCounts::dropped_events`](crate::RecorderCounts).
    pub fn pending_traces(mut self, count: usize) -> WebOptions {
        self.pending_traces = count.max(1);
        self
    }

    /// Keeps at most `count` events of one trace (at least 1); later ones are counted as dropped.
    pub fn events_per_trace(mut self, count: usize) -> WebOptions {
        self.events_per_trace = count.max(1);
        self
    }

    /// Caps the payload text kept per event at `bytes` (keys, values and 32 bytes per entry);
    /// a longer value is cut at a character boundary and ends with `…`, later entries are left out.
    pub fn payload_bytes(mut self, bytes: usize) -> WebOptions {
        self.payload_bytes = bytes;
        self
    }

    /// The per-name statistics cover the last `window` (at least 1 ms), kept in
    /// [`slots`](WebOptions::slots) equal slots; the latency chart draws one point per slot.
    pub fn window(mut self, window: Duration) -> WebOptions {
        self.window = window.max(Duration::from_millis(1));
        self
    }

    /// Splits the window into `slots` slots (1 to 600). Each name takes one histogram per slot
    /// it saw events in (2 significant digits, about 3 to 9 KiB for latencies up to seconds).
    pub fn slots(mut self, slots: usize) -> WebOptions {
        self.slots = slots.clamp(1, 600);
        self
    }

    /// Keeps statistics for at most `count` event names (at least 1; default 1,000): a new name
    /// past that evicts the least recently seen one, counted in
    /// [`RecorderCounts::evicted_names`](crate::RecorderCounts::evicted_names). Each kept name
    /// takes its histograms (see [`slots`](WebOptions::slots)), all counted in
    /// [`TraceRecorder::memory_bytes`](crate::TraceRecorder::memory_bytes).
    pub fn names(mut self, count: usize) -> WebOptions {
        self.names = count.max(1);
        self
    }

    /// How long an unfinished trace waits for another event before it is taken as finished
    /// (default 1 s; at least 1 ms). A trace whose local root has a parent in another process (a
    /// request that arrived with a W3C `traceparent`) has no event without a parent: it is
    /// finished, complete, with that local root as its root, once no event of it arrived for
    /// this long. The recorder sees only finished events and cannot tell such a remote parent
    /// from a local one still running: a local parent that finishes later than this joins the
    /// trace (while it is kept) and becomes its root.
    pub fn remote_root_wait(mut self, wait: Duration) -> WebOptions {
        self.remote_root_wait = wait.max(Duration::from_millis(1));
        self
    }

    /// The index page (`/`) reloads itself every `every` (whole seconds, at least 1; `None`: never),
    /// so a page left open stays live. It is an HTML `<meta http-equiv="refresh">`: the pages
    /// run no script. Trace pages do not reload (a finished trace does not change).
    ///
    /// ```
    /// use std::time::Duration;
    /// let html = |options| notify_web::render_index(&notify_web::TraceRecorder::new(options));
    /// let options = notify_web::WebOptions::new();
    /// assert!(html(options.clone()).contains(r#"<meta http-equiv="refresh" content="5">"#));
    /// assert!(html(options.clone().refresh(Duration::from_millis(1500))).contains(r#"content="2">"#));
    /// assert!(!html(options.refresh(None)).contains("http-equiv"));
    /// ```
    pub fn refresh(mut self, every: impl Into<Option<Duration>>) -> WebOptions {
        self.refresh = every.into();
        self
    }

    /// Requires `token` on every request: the query parameter `token=...` (URL-encoded: any
    /// bytes work, e.g. `s3cr%2Bt` for `s3cr+t`) or the header `Authorization: Bearer ...`,
    /// compared in constant time. Without it anyone who can reach
    /// the address can read the page (it binds 127.0.0.1 unless told otherwise).
    pub fn token(mut self, token: impl Into<String>) -> WebOptions {
        self.token = Some(token.into());
        self
    }

    /// [`WebServer`](crate::WebServer): serves at most `count` connections at once (at least 1;
    /// default 256). A connection past that takes the place of the open connection that has made
    /// the least progress (it is closed, counted in
    /// [`ServerCounts::evicted_connections`](crate::ServerCounts::evicted_connections)): the one
    /// waiting longest for a request head to arrive whole, bytes trickled into a head counting
    /// for nothing, or one writing a response that has written nothing for 100 ms or more;
    /// never one whose page is being rendered. When none can be closed, the new connection is,
    /// counted in [`ServerCounts::refused_connections`](crate::ServerCounts::refused_connections).
    /// So idle, half-open and trickling (slowloris) connections cannot lock out a client, however
    /// many there are, and open file descriptors stay bounded. See
    /// [`WebServer`](crate::WebServer)'s "Connection limit" for why.
    pub fn max_connections(mut self, count: usize) -> WebOptions {
        self.max_connections = count.max(1);
        self
    }

    /// [`WebServer`](crate::WebServer): a request's line and headers must arrive within
    /// `timeout` of the server starting to read them (at least 1 ms; default 10 s), else the
    /// connection is closed without a response (slowloris), counted in
    /// [`ServerCounts::header_timeouts`](crate::ServerCounts::header_timeouts).
    pub fn header_read_timeout(mut self, timeout: Duration) -> WebOptions {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// [`WebServer`](crate::WebServer): a connection that neither sends nor receives a byte for
    /// `timeout` (at least 1 ms; default 30 s) is closed, counted in
    /// [`ServerCounts::idle_timeouts`](crate::ServerCounts::idle_timeouts): keep-alive
    /// connections between requests. A connection that sends nothing at all is waiting for a
    /// request head: [`header_read_timeout`](WebOptions::header_read_timeout) closes it first
    /// when it is the shorter (as by default).
    pub fn idle_timeout(mut self, timeout: Duration) -> WebOptions {
        self.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// [`WebServer`](crate::WebServer): a response must be written whole within `timeout` of
    /// the request (at least 1 ms; default 30 s), else its connection is closed, counted in
    /// [`ServerCounts::response_timeouts`](crate::ServerCounts::response_timeouts): a client that
    /// asks for a large trace and does not read it holds nothing for long. Each connection is
    /// served on its own task, so a slow reader never delays the others meanwhile.
    pub fn response_timeout(mut self, timeout: Duration) -> WebOptions {
        self.response_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// [`WebServer`](crate::WebServer): the page takes no request body and never reads or
    /// stores one. A request declaring more than `bytes` of body (`Content-Length`; default
    /// 16 KiB), or a body of unknown length (chunked), gets `413 Payload Too Large` before any
    /// other check (the token included) and its connection is closed, counted in
    /// [`ServerCounts::too_large`](crate::ServerCounts::too_large).
    pub fn max_request_body(mut self, bytes: u64) -> WebOptions {
        self.max_request_body = bytes;
        self
    }

    /// [`WebServer`](crate::WebServer): the bytes that responses over 1 MiB (large traces, say)
    /// may hold together while they are written (default 256 MiB). A large response that would
    /// take the ones in flight past it gets `503 Service Unavailable` with `Retry-After: 1`
    /// instead, counted in [`ServerCounts::busy`](crate::ServerCounts::busy); one is always
    /// served when no other is in flight, and responses up to 1 MiB always are. So clients that
    /// ask for large traces and read slowly cannot make the server hold
    /// `max_connections` × the largest page.
    pub fn response_memory(mut self, bytes: usize) -> WebOptions {
        self.response_memory = bytes;
        self
    }

    /// Tail-samples what the trace store keeps: [`TraceRecorder::subscribe`](crate::TraceRecorder::subscribe)
    /// puts a second notify-export collector with this configuration
    /// ([`CollectorBuilder::tail_sampling`](notify_export::CollectorBuilder::tail_sampling)) in
    /// front of the store (see [`TraceSink`](crate::TraceSink)): a trace is held until its local
    /// root arrives, then stored whole when it has an error, a root slower than the threshold, or
    /// falls in the ratio, and left out whole otherwise. The per-name statistics still see every
    /// event. What tail sampling drops is counted by cause in
    /// [`TraceRecorder::tail_stats`](crate::TraceRecorder::tail_stats) and in
    /// [`RecorderCounts::tail_dropped`](crate::RecorderCounts::tail_dropped); the events it holds
    /// (at most `max_traces` × (`max_events_per_trace` + 1) shared events) are in
    /// [`RecorderCounts::tail_held`](crate::RecorderCounts::tail_held), not in
    /// [`memory_bytes`](crate::TraceRecorder::memory_bytes). Default: off, every event stored.
    /// [`TraceRecorder::record`](crate::TraceRecorder::record), which feeds the recorder
    /// directly, does not go through it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use notify_export::TailSampling;
    /// let options = notify_web::WebOptions::new()
    ///     .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(250)).ratio(0.01));
    /// assert!(format!("{options:?}").contains("tail_sampling: Some("));
    /// ```
    pub fn tail_sampling(mut self, config: TailSampling) -> WebOptions {
        self.tail = Some(config);
        self
    }

    /// The number of finished traces kept.
    pub fn max_traces(&self) -> usize {
        self.traces
    }

    /// The most heap and inline bytes one stored event takes (1,136 on 64-bit Linux with the
    /// defaults): the fixed size of a stored event (112 bytes)
    /// (the event name is shared by all events of that name) plus [`payload_bytes`](WebOptions::payload_bytes).
    /// The held events' part of the recorder's [`memory_bytes`](crate::TraceRecorder::memory_bytes)
    /// (`memory_bytes - stats_bytes` in [`RecorderCounts`](crate::RecorderCounts)) never exceeds
    /// this times the number of events it holds.
    pub fn bytes_per_event(&self) -> usize {
        std::mem::size_of::<TraceEvent>() + self.payload_bytes
    }

    /// The length of one statistics slot.
    pub(crate) fn slot_length(&self) -> Duration {
        self.window / self.slots as u32
    }
}
