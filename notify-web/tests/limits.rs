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
    assert_eq!(
        server.counts().requests,
        1,
        "only the legitimate request reached the pages"
    );
}
