//! A real Prometheus server (Debian's `prometheus`) for the tests: started on a free loopback
//! port with a temporary configuration and TSDB directory, killed and reaped when dropped (also
//! when the test fails), and read through its HTTP API.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

pub const INSTALL_HINT: &str = "install it with `apt-get update && apt-get install -y prometheus` (Debian's package)";

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The Prometheus child process; killed and reaped on drop, whatever happened.
pub struct Prometheus {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `prometheus` scraping `target` every second, with `flags` added (e.g.
    /// `--enable-feature=exemplar-storage`), and waits until it is ready. Panics with the
    /// install hint when the binary is missing.
    pub fn start(dir: &Path, target: SocketAddr, flags: &[&str]) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: notify\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let log = dir.join("prometheus.log");
        let file = std::fs::File::create(&log).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(flags)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("the `prometheus` binary is not on PATH: {INSTALL_HINT}")
            }
            Err(e) => panic!("could not start prometheus: {e}"),
        };
        let server = Prometheus { child, port, log };
        server.wait_for(Duration::from_secs(30), "prometheus to be ready", || {
            matches!(get(port, "/-/ready"), Ok((200, _))).then_some(())
        });
        server
    }

    /// Polls `f` every 250 ms until it returns `Some`, for at most `limit`; panics with the
    /// server's log after that.
    pub fn wait_for<T>(&self, limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = f() {
                return value;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("timed out after {limit:?} waiting for {what}; prometheus log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The `data` of a successful API answer at `path` (`None` before the server answers 200).
    pub fn api(&self, path: &str) -> Option<Json> {
        let Ok((200, body)) = get(self.port, path) else {
            return None;
        };
        let json: Json = serde_json::from_str(&body).unwrap();
        assert_eq!(json["status"], "success", "{body}");
        Some(json["data"].clone())
    }

    /// The instant vector of `query`: one (labels, value) per series.
    pub fn query(&self, query: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let Some(data) = self.api(&format!("/api/v1/query?query={}", encode(query))) else {
            return Vec::new();
        };
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|series| {
                let value = series["value"][1].as_str().unwrap().parse().unwrap();
                (labels_of(&series["metric"]), value)
            })
            .collect()
    }
}

/// A JSON object of strings as a map.
pub fn labels_of(object: &Json) -> BTreeMap<String, String> {
    object
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect()
}

/// `GET path` over HTTP/1.0: (status code, body).
pub fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
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
pub fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
