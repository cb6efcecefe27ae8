//! WebServer when the process runs out of file descriptors: accept fails with EMFILE, the server
//! pauses and goes on (tiny_http's accept loop ended for good). Its own test binary: it lowers
//! this process's descriptor limit (with util-linux's `prlimit`; Linux only).

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use notify_web::{TraceRecorder, WebOptions, WebServer};

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn file_descriptors_running_out_pause_the_accept_loop_and_never_end_it() {
    let options = WebOptions::new().max_connections(10_000);
    let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(options)).unwrap();
    let addr = server.local_addr();
    // Room for about 40 more descriptors in this process (client and server sides both count).
    let limit = open_descriptors() + 40;
    let pid = std::process::id().to_string();
    let status = Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={limit}:")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit failed: {status}");
    // Connect until this process cannot make another socket: the server's accepts fail too.
    let mut clients = Vec::new();
    while clients.len() < 200 {
        match TcpStream::connect(addr) {
            Ok(stream) => clients.push(stream),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(24), "EMFILE expected, got {e}");
                break;
            }
        }
    }
    assert!(clients.len() < 200, "the limit was reached");
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.counts().accept_errors == 0 {
        assert!(Instant::now() < deadline, "no accept error seen: {:?}", server.counts());
        std::thread::sleep(Duration::from_millis(10));
    }
    // Keep the pressure a while: the loop pauses and retries, it does not end.
    std::thread::sleep(Duration::from_millis(300));
    let errors = server.counts().accept_errors;
    assert!(errors >= 2, "it retried: {errors}");
    assert!(errors < 100, "it backed off (5 ms doubling to 100 ms): {errors}");
    drop(clients);
    // Descriptors are back: a legitimate request is answered in under 1 s.
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET /api/traces HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let took = started.elapsed();
    assert!(
        response.starts_with("HTTP/1.0 200 OK\r\n") && response.ends_with("\r\n\r\n[]"),
        "{response}"
    );
    assert!(took < Duration::from_secs(1), "a legitimate request took {took:?}");
}
