//! WebServer under attack, over real loopback sockets: each attack gets its exact answer, the
//! server survives it, and a legitimate request made meanwhile is answered in under 1 s.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Subscription};
use notify_web::{TraceRecorder, WebOptions, WebServer};

/// A legitimate request (HTTP/1.0, so the server closes after it): asserts it gets `200` and
/// returns how long the answer took.
fn legit(addr: SocketAddr, headers: &str) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET /api/stats HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let took = started.elapsed();
    assert!(response.starts_with("HTTP/1.0 200 OK\r\n"), "{response}");
    assert!(response.contains("\"counts\""), "{response}");
    took
}

/// Asserts the legitimate request answered within the 1 s bound.
fn assert_legit_fast(addr: SocketAddr, headers: &str) {
    let took = legit(addr, headers);
    assert!(took < Duration::from_secs(1), "a legitimate request took {took:?}");
}

/// Reads what the server sends until it closes the connection (EOF or reset) or `limit` passes;
/// returns the bytes and whether it was closed.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0_u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, true),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return (got, false),
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Polls `check` every 10 ms until it holds or 10 s pass.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_huge_content_length_gets_413_without_the_body_being_read_also_unauthenticated() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new().token("s3cret"))).unwrap();
    let addr = server.local_addr();
    let bearer = "Authorization: Bearer s3cret\r\n";
    let attacks = [
        // Authorized: tiny_http allocated the declared length when it dropped the unread body.
        format!("POST /api/stats HTTP/1.1\r\nHost: {addr}\r\n{bearer}Content-Length: 99999999999999\r\n\r\nabc"),
        // No token at all: refused for its size before the token is looked at.
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 99999999999999\r\n\r\n"),
        // Just over the default limit (16 KiB).
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\n{bearer}Content-Length: 16385\r\n\r\n"),
        // A body of unknown length.
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n"),
    ];
    let mut open = Vec::new();
    for attack in &attacks {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(attack.as_bytes()).unwrap();
        let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
        let response = String::from_utf8(response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
            "{attack:?}: {response}"
        );
        assert!(response.contains("Connection: close\r\n"), "{response}");
        assert!(
            response.ends_with("this server takes no request body over 16384 bytes\n"),
            "{response}"
        );
        assert!(closed, "{attack:?}: the connection is closed after the 413");
        assert_legit_fast(addr, bearer);
        open.push(stream);
    }
    // A small body is within the limit (never read, and the connection goes on).
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /api/stats HTTP/1.0\r\nHost: {addr}\r\n{bearer}Content-Length: 5\r\n\r\nhello"
    )
    .unwrap();
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    assert!(closed);
    assert!(String::from_utf8(response).unwrap().starts_with("HTTP/1.0 200 OK\r\n"));
    let counts = server.counts();
    assert_eq!((counts.too_large, counts.requests), (4, 4 + 4 + 1));
}

#[test]
fn a_request_head_sent_a_byte_at_a_time_is_cut_at_the_header_timeout() {
    let options = WebOptions::new().header_read_timeout(Duration::from_millis(300));
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(options)).unwrap();
    let addr = server.local_addr();
    let mut stream = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // Slowloris: a header line every 50 ms, never the blank line that ends the head.
        let _ = writer.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n");
        for n in 0..100 {
            std::thread::sleep(Duration::from_millis(50));
            if writer.write_all(format!("X-Slow-{n}: y\r\n").as_bytes()).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_legit_fast(addr, "");
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(3));
    let took = started.elapsed();
    assert!(closed, "the trickling connection is closed");
    assert!(response.is_empty(), "closed without a response: {response:?}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "closed after {took:?}"
    );
    let _ = stream.shutdown(Shutdown::Both);
    trickle.join().unwrap();
    assert_legit_fast(addr, "");
    let counts = server.counts();
    assert_eq!((counts.header_timeouts, counts.idle_timeouts), (1, 0));
}

#[test]
fn a_keep_alive_connection_left_idle_is_closed_at_the_idle_timeout() {
    let options = WebOptions::new().idle_timeout(Duration::from_millis(300));
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(options)).unwrap();
    let addr = server.local_addr();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET /api/traces HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = [0_u8; 512];
    let n = stream.read(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response[..n]).into_owned();
    assert!(
        response.starts_with("HTTP/1.1 200 OK\r\n") && response.ends_with("\r\n\r\n[]"),
        "{response}"
    );
    let idle_from = Instant::now();
    let (more, closed) = read_until_closed(&mut stream, Duration::from_secs(3));
    let idle = idle_from.elapsed();
    assert!(closed && more.is_empty(), "closed without more bytes");
    assert!(
        idle >= Duration::from_millis(250) && idle < Duration::from_secs(2),
        "closed after {idle:?} idle"
    );
    assert_legit_fast(addr, "");
    let counts = server.counts();
    assert_eq!((counts.idle_timeouts, counts.header_timeouts), (1, 0));
}

#[test]
fn half_open_connections_beyond_the_limit_are_closed_and_cannot_lock_out_a_client() {
    let options = WebOptions::new().max_connections(8);
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(options)).unwrap();
    let addr = server.local_addr();
    // 60 connections that never send a byte (each held open by the client).
    let mut attackers: Vec<TcpStream> = (0..60).map(|_| TcpStream::connect(addr).unwrap()).collect();
    eventually("the server took all 60", || {
        let c = server.counts();
        c.accepted + c.refused_connections == 60
    });
    assert!(server.counts().open_connections <= 8);
    // Past 100 ms the quietest is evictable: the legitimate client takes its place.
    std::thread::sleep(Duration::from_millis(150));
    assert_legit_fast(addr, "");
    assert_legit_fast(addr, "");
    let counts = server.counts();
    assert_eq!(counts.accepted + counts.refused_connections, 62);
    // The first took an attacker's place; the second, the first's (closed after its answer).
    assert!(counts.evicted_connections >= 1, "{counts:?}");
    // Every connection refused or evicted was an attacker's, and it sees its connection closed.
    let closed = attackers
        .iter_mut()
        .map(|s| read_until_closed(s, Duration::from_millis(100)).1)
        .filter(|&closed| closed)
        .count() as u64;
    assert_eq!(
        closed,
        counts.refused_connections + counts.evicted_connections,
        "{counts:?}"
    );
    assert_eq!(60 - closed, server.counts().open_connections as u64);
    assert!(server.counts().open_connections <= 8);
}

/// A server holding one trace of 20,000 events with 900-byte payloads (about 20 MB as JSON).
fn big_trace_server(options: WebOptions) -> (WebServer, notify_core::TraceId) {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(options.events_per_trace(20_000));
    let r = recorder.clone();
    let _subscription: Subscription =
        notifier.subscribe(Pattern::all(), Subscriber::event(move |e: &Event| r.record(e)));
    let filler = "x".repeat(900);
    notifier.instrument("request.app", Payload::new, |_| {
        for _ in 0..20_000 {
            notifier.instrument("query.sql", || Payload::new().with("sql", filler.as_str()), |_| ());
        }
    });
    let trace_id = recorder.traces()[0].trace_id();
    (WebServer::start("127.0.0.1:0", recorder).unwrap(), trace_id)
}

#[test]
fn a_client_that_never_reads_a_large_trace_stalls_nobody_and_is_cut_at_the_response_timeout() {
    let (server, trace_id) = big_trace_server(WebOptions::new().response_timeout(Duration::from_millis(500)));
    let addr = server.local_addr();
    // About 20 MB of JSON, far more than the sockets buffer: the server's writes block.
    let mut slow = TcpStream::connect(addr).unwrap();
    write!(slow, "GET /api/trace/{trace_id} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let asked = Instant::now();
    std::thread::sleep(Duration::from_millis(50));
    assert_legit_fast(addr, "");
    assert_legit_fast(addr, "");
    eventually("the stalled response is cut", || server.counts().response_timeouts == 1);
    let cut_after = asked.elapsed();
    assert!(cut_after >= Duration::from_millis(500), "cut after {cut_after:?}");
    assert_legit_fast(addr, "");
    // What the client then reads ends before the 20 MB: the server closed it.
    let (got, closed) = read_until_closed(&mut slow, Duration::from_secs(5));
    assert!(closed, "the connection was closed");
    let head_end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("the head was sent")
        + 4;
    let head = String::from_utf8_lossy(&got[..head_end]);
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .unwrap();
    assert!(length > 18_000_000, "{length}");
    assert!(got.len() - head_end < length, "the body was cut");
    let counts = server.counts();
    assert_eq!((counts.response_timeouts, counts.idle_timeouts), (1, 0));
}

#[test]
fn stopping_closes_the_listener_and_every_open_connection() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new())).unwrap();
    let addr = server.local_addr();
    let mut idle = TcpStream::connect(addr).unwrap();
    eventually("the idle connection is open", || server.counts().open_connections == 1);
    server.stop();
    let (got, closed) = read_until_closed(&mut idle, Duration::from_secs(2));
    assert!(closed && got.is_empty(), "closed without a response");
    let refused = TcpStream::connect(addr).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn served_on_the_hosts_tokio_runtime_with_the_same_limits() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let options = WebOptions::new().header_read_timeout(Duration::from_millis(200));
    let server = WebServer::start_on(runtime.handle(), "127.0.0.1:0", TraceRecorder::new(options)).unwrap();
    let addr = server.local_addr();
    assert_legit_fast(addr, "");
    let mut silent = TcpStream::connect(addr).unwrap();
    let (got, closed) = read_until_closed(&mut silent, Duration::from_secs(3));
    assert!(closed && got.is_empty());
    assert_eq!(server.counts().header_timeouts, 1);
    drop(server);
    // The accept task ends on the runtime: the port closes.
    eventually("the listener is closed", || TcpStream::connect(addr).is_err());
}

#[test]
fn large_responses_past_the_response_memory_get_503_while_small_ones_are_served() {
    // Long enough for the second page to be rendered (a debug build on a busy machine) while
    // the first is still held.
    let options = WebOptions::new()
        .response_timeout(Duration::from_secs(4))
        .response_memory(1024 * 1024);
    let (server, trace_id) = big_trace_server(options);
    let addr = server.local_addr();
    let ask = |stream: &mut TcpStream| {
        write!(stream, "GET /api/trace/{trace_id} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    };
    // The first large response is served (none other in flight) to a client that never reads.
    let mut first = TcpStream::connect(addr).unwrap();
    ask(&mut first);
    eventually("the first is being written", || {
        server.counts().large_response_bytes > 18_000_000
    });
    // A second one would hold twice the budget: refused at once.
    let mut second = TcpStream::connect(addr).unwrap();
    ask(&mut second);
    let mut head = [0_u8; 1024];
    second.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = second.read(&mut head).unwrap();
    let head = String::from_utf8_lossy(&head[..n]).into_owned();
    assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{head}");
    assert!(head.contains("Retry-After: 1\r\n"), "{head}");
    assert!(
        head.ends_with("large responses to other clients are being written; retry shortly\n"),
        "{head}"
    );
    // Small pages are served meanwhile.
    assert_legit_fast(addr, "");
    // The first is cut at its response timeout: its bytes are released, a large one is served again.
    eventually("the first is cut", || server.counts().response_timeouts == 1);
    assert_eq!(server.counts().large_response_bytes, 0);
    ask(&mut second);
    let mut head = [0_u8; 64];
    second.read_exact(&mut head).unwrap();
    assert!(
        head.starts_with(b"HTTP/1.1 200 OK\r\n"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    drop((first, second));
    eventually("released when the connection ends", || {
        server.counts().large_response_bytes == 0
    });
    assert_eq!(server.counts().busy, 1);
}

#[test]
fn a_request_head_over_64_kib_gets_431_and_the_server_goes_on() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new())).unwrap();
    let addr = server.local_addr();
    let mut stream = TcpStream::connect(addr).unwrap();
    let big = "a".repeat(70 * 1024);
    // The server may answer and close before it has read it all: a failed write is fine.
    let _ = write!(stream, "GET / HTTP/1.1\r\nHost: {addr}\r\nX-Big: {big}\r\n\r\n");
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    let response = String::from_utf8_lossy(&response);
    assert!(
        response.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{response}"
    );
    assert!(closed);
    assert_legit_fast(addr, "");
    let counts = server.counts();
    assert_eq!(
        (counts.requests, counts.too_large_heads),
        (1, 1),
        "only the legitimate request reached the pages"
    );
}

/// What a [`Flood`] saw, once stopped.
#[derive(Debug)]
struct FloodReport {
    /// Connections opened (the first `count` and every reconnection).
    connects: u64,
    /// Its connections the server closed (seen at the next tick; the flood then reconnects).
    closed: u64,
    /// Bytes the server sent to the flood's connections (any answer at all).
    received: u64,
    /// Bytes of request heads sent, in all.
    sent: u64,
    /// Rounds over every connection made (one per `every`, when the machine keeps up).
    ticks: u64,
}

/// Slowloris from raw TCP clients: `count` connections, each sending the next byte of a request
/// head that never ends (`GET /api/stats HTTP/1.1`, a `Host`, then an endless header value) every
/// `every`, all from one thread with non-blocking sockets; a connection the server closes is
/// opened again at the next tick, as an attacker would.
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Rounds made so far.
    ticks: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: std::thread::JoinHandle<FloodReport>,
}

impl Flood {
    fn start(addr: SocketAddr, count: usize, every: Duration) -> Flood {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let ticks = std::sync::Arc::new(AtomicU64::new(0));
        let (stopping, ticking) = (stop.clone(), ticks.clone());
        let thread = std::thread::spawn(move || {
            const HEAD: &[u8] = b"GET /api/stats HTTP/1.1\r\nHost: flood\r\nX-Trickle: ";
            let byte = |at: usize| HEAD.get(at).copied().unwrap_or(b'a');
            let mut report = FloodReport {
                connects: 0,
                closed: 0,
                received: 0,
                sent: 0,
                ticks: 0,
            };
            let connect = |report: &mut FloodReport| {
                let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
                stream.set_nonblocking(true).unwrap();
                report.connects += 1;
                Some((stream, 0_usize))
            };
            let mut streams: Vec<Option<(TcpStream, usize)>> = (0..count).map(|_| connect(&mut report)).collect();
            let mut tick = Instant::now();
            let mut buf = [0_u8; 1024];
            while !stopping.load(Ordering::Relaxed) {
                for slot in &mut streams {
                    let open = match slot {
                        None => false,
                        Some((stream, sent)) => {
                            let mut open = true;
                            loop {
                                match stream.read(&mut buf) {
                                    Ok(0) => open = false,
                                    Ok(n) => {
                                        report.received += n as u64;
                                        continue;
                                    }
                                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                                    Err(_) => open = false,
                                }
                                break;
                            }
                            if open {
                                match stream.write(&[byte(*sent)]) {
                                    Ok(1) => {
                                        *sent += 1;
                                        report.sent += 1;
                                    }
                                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                                    _ => open = false,
                                }
                            }
                            if !open {
                                report.closed += 1;
                            }
                            open
                        }
                    };
                    if !open {
                        *slot = connect(&mut report);
                    }
                }
                report.ticks += 1;
                ticking.store(report.ticks, Ordering::Relaxed);
                // Ticks at a steady rate (a late tick is not made up for).
                tick = (tick + every).max(Instant::now());
                std::thread::sleep(tick.saturating_duration_since(Instant::now()));
            }
            report
        });
        Flood { stop, ticks, thread }
    }

    /// Rounds made so far.
    fn ticks(&self) -> u64 {
        self.ticks.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn stop(self) -> FloodReport {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// Issue 44 item 1: 300 connections trickling a request head a byte every 50 ms (about 6 KB/s in
/// all) held every place of the default 256, each sending often enough never to be "quiet", and
/// every new legitimate GET was closed at once with 0 bytes. Each is answered now, in under 1 s.
#[test]
fn i44_1_a_flood_of_trickling_heads_cannot_lock_out_a_legitimate_request() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new())).unwrap();
    let addr = server.local_addr();
    let flood = Flood::start(addr, 300, Duration::from_millis(50));
    eventually("the flood holds every place", || {
        let c = server.counts();
        c.open_connections == 256 && c.accepted + c.refused_connections >= 300
    });
    // Six more rounds: every trickler has sent a byte within the last one, none is quiet, and
    // each has been waiting for its head for at least 250 ms.
    let from = flood.ticks();
    eventually("six rounds of the flood", || flood.ticks() >= from + 6);
    let mut took = Vec::new();
    for _ in 0..5 {
        took.push(legit(addr, ""));
        std::thread::sleep(Duration::from_millis(100));
    }
    // Each evicted trickler came back: the flood holds every place again.
    eventually("the flood back at every place", || {
        server.counts().open_connections == 256
    });
    let report = flood.stop();
    let counts = server.counts();
    assert!(
        took.iter().all(|t| *t < Duration::from_secs(1)),
        "legitimate requests took {took:?} under the flood ({counts:?}, {report:?})"
    );
    // The flood was at full strength: every open trickler sent a byte at each round.
    assert!(report.ticks >= 6 && report.sent >= 200 * report.ticks, "{report:?}");
    // Each legitimate request took a trickler's place (none was refused); no trickler's request
    // reached the pages, and none got a byte back: each was closed for a newer connection (the
    // 44 past the limit, the 5 legitimate ones, then each trickler coming back).
    assert_eq!((counts.requests, counts.refused_connections), (5, 0), "{counts:?}");
    assert!(counts.evicted_connections >= 44 + 5, "{counts:?}");
    assert!(report.closed <= counts.evicted_connections, "{report:?} {counts:?}");
    assert_eq!(report.received, 0, "{report:?}");
    assert_eq!(counts.header_timeouts, 0, "{counts:?}");
    assert_legit_fast(addr, "");
}

/// A request head of exactly `len` bytes: the request line, a `Host`, an `X-Pad` header that
/// makes up the length, and the blank line.
fn head_of(len: usize) -> String {
    let start = "GET /api/stats HTTP/1.0\r\nHost: x\r\nX-Pad: ";
    let end = "\r\n\r\n";
    let head = format!("{start}{}{end}", "p".repeat(len - start.len() - end.len()));
    assert_eq!(head.len(), len);
    head
}

/// Sends `head` on a new connection and reads the answer until the server closes it.
fn send_head(addr: SocketAddr, head: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    // The server may answer and close before it has read it all: a failed write is fine.
    let _ = stream.write_all(head.as_bytes());
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    assert!(closed, "the connection is closed after the answer");
    String::from_utf8_lossy(&response).into_owned()
}

/// Issue 44 item 2: the documented 64 KiB limit on a request head was not enforced (a 70 KiB or
/// 100 KiB head was answered 200: `max_buf_size` bounds hyper's read buffer, and one read could
/// take it past the limit with the whole head in). Exactly 65,536 bytes are served; one more
/// byte gets 431.
#[test]
fn i44_2_a_request_head_of_64_kib_is_served_and_one_byte_more_gets_431() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new())).unwrap();
    let addr = server.local_addr();
    for len in [64 * 1024 - 1, 64 * 1024] {
        let response = send_head(addr, &head_of(len));
        assert!(response.starts_with("HTTP/1.0 200 OK\r\n"), "{len}: {response}");
        assert!(response.contains("\"counts\""), "{len}: {response}");
    }
    for len in [64 * 1024 + 1, 64 * 1024 + 2, 70 * 1024, 100 * 1024, 1024 * 1024] {
        let response = send_head(addr, &head_of(len));
        // hyper's answer: no body, the connection closed (the rest of the head is never read).
        assert!(
            response.starts_with(
                "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n"
            ) && response.ends_with("\r\n\r\n"),
            "{len}: {response}"
        );
    }
    // hyper's other bound on a head: 100 headers (`Host` and 99 more) are served, 101 are not.
    let headers = |count: usize| (1..count).map(|n| format!("X-{n}: y\r\n")).collect::<String>();
    let response = send_head(
        addr,
        &format!("GET /api/stats HTTP/1.0\r\nHost: x\r\n{}\r\n", headers(100)),
    );
    assert!(response.starts_with("HTTP/1.0 200 OK\r\n"), "{response}");
    let response = send_head(
        addr,
        &format!("GET /api/stats HTTP/1.0\r\nHost: x\r\n{}\r\n", headers(101)),
    );
    assert!(
        response.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{response}"
    );
    assert_legit_fast(addr, "");
    let counts = server.counts();
    assert_eq!(
        (counts.requests, counts.too_large_heads),
        (2 + 1 + 1, 5 + 1),
        "{counts:?}"
    );
}

/// Issue 44 item 5: a malformed trace id was echoed whole: a 60 KB `/trace/<garbage>` got a
/// 60 KB `400`. The answer quotes an excerpt now (64 characters and the length).
#[test]
fn i44_5_a_60_kb_malformed_trace_id_gets_a_400_of_a_few_bytes() {
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new())).unwrap();
    let addr = server.local_addr();
    let garbage = "z".repeat(60 * 1024);
    let expected = format!(
        "400 Bad Request: a trace id is 32 hex digits, not all zero: \"{}…[61440 bytes]\"\n",
        "z".repeat(64)
    );
    assert_eq!(expected.len(), 143);
    for path in ["/trace/", "/api/trace/"] {
        let response = send_head(addr, &format!("GET {path}{garbage} HTTP/1.0\r\nHost: x\r\n\r\n"));
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 400 Bad Request\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Length: 143\r\n"), "{head}");
        assert_eq!(body, expected);
    }
    assert_eq!(server.counts().requests, 2);
}
