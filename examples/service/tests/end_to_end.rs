//! Issue 47 item 5: the notify example service end to end, against a real `nats-server` and a
//! real `prometheus` (started here on free loopback ports and stopped on drop, also when an
//! assertion fails; a missing binary fails the test with an install hint), an OTLP/HTTP receiver
//! (axum, in this test) and the live page.
//!
//! A request arrives with a W3C `traceparent` and an `x-api-key` header; the test then reads:
//! the service's JSON lines (request, SQL and call events and the application's own log line, all
//! in the caller's trace; the key redacted), the NATS consumer's count, the spans the OTLP receiver
//! got, the live page's JSON and Prometheus' query API.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NATS_HINT: &str = "install it with `apt-get update && apt-get install -y nats-server` (Debian's package)";
const PROMETHEUS_HINT: &str = "install it with `apt-get update && apt-get install -y prometheus` (Debian's package)";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const SECRET: &str = "k-9f3a-secret";

/// A child process killed and reaped on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn(program: &str, hint: &str, command: &mut Command) -> Process {
    match command.spawn() {
        Ok(child) => Process(child),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("the `{program}` binary is not on PATH: {hint}"),
        Err(e) => panic!("could not start {program}: {e}"),
    }
}

fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = f() {
            return value;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A GET with extra headers over a plain socket: status and body.
fn get(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> std::io::Result<(u16, String)> {
    get_with_head(address, path, headers).map(|(status, _, body)| (status, body))
}

/// A GET with extra headers over a plain socket: status, response head and body.
fn get_with_head(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> std::io::Result<(u16, String, String)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    // Chunked bodies (axum's) keep their chunk sizes; the tests look for substrings only.
    Ok((status, head.to_ascii_lowercase(), body.to_owned()))
}

/// The request bodies a receiver got.
type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

/// The test's OTLP/HTTP receiver: the bodies of the POSTs to `/v1/traces`.
fn otlp_receiver() -> (SocketAddr, Bodies, std::thread::JoinHandle<()>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let received = bodies.clone();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: bytes::Bytes| async move {
                    received.lock().unwrap().push(body.to_vec());
                    ""
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let _ = tokio::time::timeout(Duration::from_secs(120), axum::serve(listener, app)).await;
        });
    });
    (address, bodies, thread)
}

fn start_prometheus(dir: &Path, port: u16, target: SocketAddr) -> Process {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: catalog\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    spawn(
        "prometheus",
        PROMETHEUS_HINT,
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log),
    )
}

#[test]
fn i47_5_example_service_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let nats_port = free_port();
    let _nats = spawn(
        "nats-server",
        NATS_HINT,
        Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &nats_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let nats: SocketAddr = format!("127.0.0.1:{nats_port}").parse().unwrap();
    wait_for(Duration::from_secs(10), "nats-server", || TcpStream::connect(nats).ok());
    let (otlp, spans, _otlp_thread) = otlp_receiver();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let app: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();

    let mut service = spawn(
        "notify-service",
        "built by cargo with this test",
        Command::new(env!("CARGO_BIN_EXE_notify-service"))
            .env_clear()
            .env("APP_ADDRESS", app.to_string())
            .env("RUST_LOG", "info,sql=debug")
            .env("OTEL_SERVICE_NAME", "catalog-e2e")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{otlp}"))
            .env("NOTIFY_NATS_URL", format!("nats://{nats}"))
            .env("NOTIFY_PROMETHEUS_ADDRESS", metrics.to_string())
            .env("NOTIFY_WEB_ADDRESS", web.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let stdout = service.0.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let reading = {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        })
    };
    let mut stderr = BufReader::new(service.0.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert_eq!(
        first.trim(),
        format!("listening on http://{app}"),
        "the service did not start"
    );
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));

    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let (status, head, body) =
        get_with_head(app, "/books/1", &[("traceparent", &traceparent), ("x-api-key", SECRET)]).unwrap();
    assert_eq!(status, 200, "{body}");
    // W3C out to the client: Level 2's traceresponse names the caller's trace.
    assert!(head.contains(&format!("traceresponse: 00-{TRACE}-")), "{head}");
    assert!(body.contains("Dune by Frank Herbert: 1.99 EUR"), "{body}");
    let (status, _) = get(app, "/books/99", &[]).unwrap();
    assert_eq!(status, 404);

    // NATS: the consumer received the request events the exporter published (2 requests served
    // to the test, 1 call to /prices).
    wait_for(Duration::from_secs(20), "the NATS consumer", || {
        let (_, body) = get(app, "/consumed", &[]).ok()?;
        let count: u64 = body.lines().find_map(|l| l.trim().parse().ok())?;
        (count >= 3).then_some(())
    });
    // The live page holds the caller's trace.
    wait_for(Duration::from_secs(20), "the live page", || {
        let (status, body) = get(web, "/api/traces", &[]).ok()?;
        (status == 200 && body.contains(TRACE)).then_some(())
    });
    // Prometheus scraped the service's metrics.
    let prometheus_port = free_port();
    let _prometheus = start_prometheus(dir.path(), prometheus_port, metrics);
    let prometheus: SocketAddr = format!("127.0.0.1:{prometheus_port}").parse().unwrap();
    wait_for(Duration::from_secs(60), "prometheus to scrape the service", || {
        // http_server_request_duration_seconds_count{http_route="/books/{id}"}: the RED metrics.
        let query = "/api/v1/query?query=http_server_request_duration_seconds_count%7Bhttp_route%3D%22%2Fbooks%2F%7Bid%7D%22%7D";
        let (status, body) = get(prometheus, query, &[]).ok()?;
        (status == 200 && body.contains("\"http_route\":\"/books/{id}\"")).then_some(())
    });

    // Stop the service: its guard flushes the OTLP exporter and the lines.
    let pid = service.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let exit = wait_for(Duration::from_secs(20), "the service to stop", || {
        service.0.try_wait().unwrap()
    });
    assert!(exit.success(), "{exit:?}");
    reading.join().unwrap();

    // OTLP: the spans arrived, in the caller's trace (protobuf carries the 16 raw bytes).
    let trace_bytes: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&TRACE[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let bodies = spans.lock().unwrap();
    assert!(
        bodies.iter().any(|b| b.windows(16).any(|w| w == trace_bytes)),
        "no OTLP body carries the caller's trace id ({} bodies)",
        bodies.len()
    );

    let lines = lines.lock().unwrap();
    let text = lines.join("\n");
    assert!(!text.contains(SECRET), "the API key leaked:\n{text}");
    let json: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    let in_trace = |f: &dyn Fn(&serde_json::Value) -> bool| {
        json.iter()
            .filter(|l| l["trace_id"] == TRACE && f(l))
            .cloned()
            .collect::<Vec<_>>()
    };
    let requests = in_trace(&|l| l["event"] == "request.http");
    assert_eq!(
        requests.len(),
        2,
        "the request and the call to /prices it made:\n{text}"
    );
    let request = requests
        .iter()
        .find(|l| l["payload"]["http.route"] == "/books/{id}")
        .unwrap();
    assert_eq!(
        request["parent_id"], CALLER_SPAN,
        "W3C in: the caller's span is the parent"
    );
    assert_eq!(request["payload"]["http.request.header.x-api-key"], "[FILTERED]");
    let call = in_trace(&|l| l["event"] == "request.http_client");
    assert_eq!(call.len(), 1, "{text}");
    let prices = requests
        .iter()
        .find(|l| l["payload"]["http.route"] == "/prices/{id}")
        .unwrap();
    assert_eq!(
        prices["parent_id"], call[0]["span_id"],
        "W3C out: the call is the parent of the prices request"
    );
    let sql = in_trace(&|l| l["event"] == "query.sql");
    assert_eq!(sql.len(), 1, "{text}");
    assert_eq!(sql[0]["payload"]["binds"], serde_json::json!([1]));
    assert_eq!(sql[0]["parent_id"], request["span_id"]);
    let logged = in_trace(&|l| l["message"] == "book 1 found: Dune");
    assert_eq!(
        logged.len(),
        1,
        "the application's own log line, in the request's trace:\n{text}"
    );
    assert_eq!(logged[0]["span_id"], request["span_id"]);
}
