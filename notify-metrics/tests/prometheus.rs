//! End to end: the example's exporter, scraped by a real Prometheus server (Debian's
//! `prometheus`), read back through Prometheus' HTTP query API.
//!
//! The test starts `prometheus` on a free loopback port with a temporary configuration (scrape
//! interval 1 s, only the example's endpoint, no remote storage) and a temporary TSDB directory,
//! and kills it when it ends, also on failure.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

#[path = "../examples/prometheus.rs"]
#[allow(dead_code)]
mod example;

const INSTALL_HINT: &str = "install it with `apt-get update && apt-get install -y prometheus` (Debian's package)";

/// A free loopback port (bound, read, released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The Prometheus child process; killed and reaped on drop, whatever happened.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &Path, port: u16, target: SocketAddr) -> Server {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: notify\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn();
    match child {
        Ok(child) => Server { child },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("the `prometheus` binary is not on PATH: {INSTALL_HINT}")
        }
        Err(e) => panic!("could not start prometheus: {e}"),
    }
}

/// `GET path` over HTTP/1.0: (status code, body).
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_owned();
    Ok((status, body))
}

/// Percent-encodes a PromQL query for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The instant vector of `query`: one (labels, value) per series.
fn query(port: u16, query: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let Ok((200, body)) = get(port, &format!("/api/v1/query?query={}", encode(query))) else {
        return Vec::new();
    };
    let json: Json = serde_json::from_str(&body).unwrap();
    assert_eq!(json["status"], "success", "{body}");
    json["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|series| {
            let labels = series["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            let value = series["value"][1].as_str().unwrap().parse().unwrap();
            (labels, value)
        })
        .collect()
}

/// Polls `f` every 250 ms until it returns `Some`, for at most `limit`.
fn wait_for<T>(limit: Duration, what: &str, log: &Path, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = f() {
            return value;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("timed out after {limit:?} waiting for {what}; prometheus log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn prometheus_scrapes_the_examples_metrics() {
    let exporter: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let _subscription = example::install(exporter).unwrap();
    example::workload();

    // The exporter serves the series before Prometheus is involved.
    let (status, text) = get(exporter.port(), "/metrics").unwrap();
    assert_eq!(status, 200);
    assert!(
        text.contains(r#"notify_events_total{event="query.sql",table="books",outcome="error"} 2"#),
        "{text}"
    );

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("prometheus.log");
    let port = free_port();
    let _server = start_prometheus(dir.path(), port, exporter);
    wait_for(Duration::from_secs(30), "prometheus to be ready", &log, || {
        matches!(get(port, "/-/ready"), Ok((200, _))).then_some(())
    });

    // One scrape of the target, then the series as recorded by the one workload round.
    let counts = wait_for(Duration::from_secs(30), "the first scrape", &log, || {
        let series = query(port, r#"notify_events_total{job="notify",event="query.sql"}"#);
        (series.len() == 4).then_some(series)
    });
    let counts: BTreeMap<(String, String), f64> = counts
        .into_iter()
        .map(|(labels, value)| ((labels["table"].clone(), labels["outcome"].clone()), value))
        .collect();
    let expected: BTreeMap<(String, String), f64> = [
        (("books", "completed"), 18.0),
        (("books", "error"), 2.0),
        (("orders", "completed"), 9.0),
        (("orders", "error"), 1.0),
    ]
    .into_iter()
    .map(|((table, outcome), n)| ((table.to_owned(), outcome.to_owned()), n))
    .collect();
    assert_eq!(counts, expected);

    let requests = query(
        port,
        r#"notify_events_total{event="request.http",status="200",outcome="completed"}"#,
    );
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].1, 1.0);

    // The histogram: every query observed once, each slower than 200 µs, none slower than 10 s.
    let observed = query(port, r#"sum(notify_event_duration_seconds_count{event="query.sql"})"#);
    assert_eq!(observed[0].1, example::QUERIES_PER_ROUND as f64);
    let fast = query(
        port,
        r#"sum(notify_event_duration_seconds_bucket{event="query.sql",le="0.0001"})"#,
    );
    assert_eq!(fast[0].1, 0.0);
    let all = query(
        port,
        r#"sum(notify_event_duration_seconds_bucket{event="query.sql",le="10"})"#,
    );
    assert_eq!(all[0].1, example::QUERIES_PER_ROUND as f64);
    let mean = query(
        port,
        r#"sum(notify_event_duration_seconds_sum{event="query.sql"}) / sum(notify_event_duration_seconds_count{event="query.sql"})"#,
    );
    assert!(
        mean[0].1 > 0.0002 && mean[0].1 < 1.0,
        "mean query duration {} s",
        mean[0].1
    );
}
