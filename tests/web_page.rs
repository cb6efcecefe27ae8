//! The live page in a real browser: starts `bookstore --serve` on a free loopback port, loads the
//! index and a trace in headless Chromium (Debian's `chromium`), checks the rendered DOM, and
//! saves screenshots to `target/tmp/notify-web/` (the README's `docs/trace-view.png` comes from here).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Kills and reaps the child when dropped, also when the test fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The bookstore example, always built (or found fresh) by cargo before it is run, with the profile
/// of this test binary (`target/<profile>/deps/web_page-*` → `--profile <profile>`): an example
/// left in `target/<profile>/examples/` by an older build is never run as is. Its path comes from
/// cargo's own `compiler-artifact` message, so a custom target directory or profile works too.
/// When the example is up to date (`cargo test` builds examples beside the tests) this is a
/// no-op build of well under a second.
fn bookstore_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => "dev",
        Some(name) => name,
    };
    let mut cargo = Command::new(env!("CARGO"));
    // Without the variables cargo sets for the running test (CARGO_MANIFEST_DIR, CARGO_PKG_NAME,
    // ...): build scripts watch some of them (ring's `rerun-if-env-changed`), so passing them on
    // made this build and the next `cargo test` each rebuild ring, rustls and async-nats.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if is_set_by_cargo_for_tests(&name) {
            cargo.env_remove(&*name);
        }
    }
    let output = cargo
        .args([
            "build",
            "--example",
            "bookstore",
            "--message-format=json",
            "--profile",
            profile,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo build --example bookstore --profile {profile} failed"
    );
    bookstore_executable(&String::from_utf8_lossy(&output.stdout))
        .unwrap_or_else(|| panic!("cargo build --example bookstore named no executable for `bookstore`"))
}

/// True for the environment variables cargo sets when it runs a test (not those configuring cargo,
/// such as `CARGO_HOME`, `CARGO_TARGET_DIR` or `CARGO_PROFILE_*`, which are kept).
fn is_set_by_cargo_for_tests(name: &str) -> bool {
    const EXACT: [&str; 8] = [
        "OUT_DIR",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    const PREFIXES: [&str; 4] = ["CARGO_PKG_", "CARGO_BIN_", "CARGO_CFG_", "CARGO_FEATURE_"];
    EXACT.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// The `executable` of the bookstore example's `compiler-artifact` message in cargo's JSON output.
fn bookstore_executable(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact" && message["target"]["name"] == "bookstore")
        .filter(|message| {
            let kinds = message["target"]["kind"].as_array();
            kinds.is_some_and(|kinds| kinds.iter().any(|kind| kind == "example"))
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
}

#[test]
fn bookstore_executable_is_read_from_cargos_artifact_message() {
    let messages = concat!(
        "{\"reason\":\"compiler-artifact\",\"target\":{\"name\":\"notify_app\",\"kind\":[\"lib\"]},\"executable\":null}\n",
        "not json\n",
        "{\"reason\":\"compiler-artifact\",\"target\":{\"name\":\"bookstore\",\"kind\":[\"example\"]},",
        "\"executable\":\"/t/release/examples/bookstore\"}\n",
        "{\"reason\":\"build-finished\",\"success\":true}\n",
    );
    assert_eq!(
        bookstore_executable(messages),
        Some(PathBuf::from("/t/release/examples/bookstore"))
    );
    assert_eq!(
        bookstore_executable("{\"reason\":\"build-finished\",\"success\":true}\n"),
        None
    );
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn http_get(addr: SocketAddr, target: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{target}: {head}"
    );
    body.to_owned()
}

/// Runs headless Chromium with `args` and the common flags; returns its stdout. Fails with the
/// install command when it is missing, and kills it after 90 s.
fn chromium(profile: &Path, args: &[&str]) -> String {
    let child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("chromium is not installed; this test needs it: apt-get install chromium")
        }
        Err(e) => panic!("cannot start chromium: {e}"),
    };
    let mut child = Killed(child);
    let mut stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = tx.send(out);
    });
    let out = rx
        .recv_timeout(Duration::from_secs(90))
        .expect("chromium did not finish within 90 s");
    let status = child.0.wait().unwrap();
    assert!(status.success(), "chromium {args:?} failed: {status}");
    out
}

fn screenshot(profile: &Path, url: &str, file: &Path) {
    chromium(
        profile,
        &[
            &format!("--screenshot={}", file.display()),
            "--window-size=1280,900",
            url,
        ],
    );
    let png = std::fs::read(file).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", file.display());
    assert!(
        png.len() > 5_000,
        "{} is suspiciously small ({} bytes)",
        file.display(),
        png.len()
    );
}

#[test]
fn the_live_page_renders_traces_and_rows_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let child = Command::new(bookstore_binary())
        // Room for every trace of the test's ~30 s (about 17 a second), so the one chosen is
        // never forgotten before chromium, slow to start on a busy machine, loads its page.
        .args(["--serve", &addr.to_string(), "--traces", "100000", "--db"])
        .arg(dir.path().join("bookstore.sqlite"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut bookstore = Killed(child);
    let stdout = bookstore.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the bookstore printed nothing in 60 s");
    assert_eq!(
        first,
        format!("Serving the live page on http://{addr}/ (Ctrl-C to stop)")
    );

    // Wait for an order: the POST /orders trace nests a transaction's queries under the request.
    // The newest such trace (with `--traces 100000` none is forgotten during the test anyway).
    let the_insert = |trace: &serde_json::Value| {
        trace["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["payload"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|kv| kv[1].as_str().is_some_and(|v| v.starts_with("INSERT")))
            })
            .cloned()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let (trace_id, events, insert) = 'wait: loop {
        let traces: serde_json::Value = serde_json::from_str(&http_get(addr, "/api/traces")).unwrap();
        let mut candidates: Vec<&serde_json::Value> = traces
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["root"] == "request.bookstore" && t["event_count"].as_u64().unwrap() >= 4)
            .collect();
        candidates.sort_by_key(|t| std::cmp::Reverse(t["start"].as_str().unwrap_or_default().to_owned()));
        for summary in candidates {
            let id = summary["trace_id"].as_str().unwrap();
            let trace: serde_json::Value = serde_json::from_str(&http_get(addr, &format!("/api/trace/{id}"))).unwrap();
            if let Some(insert) = the_insert(&trace) {
                break 'wait (id.to_owned(), summary["event_count"].as_u64().unwrap(), insert);
            }
        }
        if Instant::now() > deadline {
            panic!("no order's trace (4 events, an INSERT) in 30 s: {traces}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Event ids are 16 hex digits in the JSON and in the page.
    let open = insert["id"].as_str().unwrap().to_owned();

    let profile = tempfile::tempdir().unwrap();
    let index = chromium(profile.path(), &["--dump-dom", &format!("http://{addr}/")]);
    assert!(index.contains("<table id=\"traces\">"), "{index}");
    assert!(
        index.contains(&format!("<a href=\"/trace/{trace_id}\">request.bookstore</a>")),
        "{index}"
    );
    for name in ["import.bookstore", "query.sql", "request.bookstore"] {
        assert!(
            index.contains(&format!("<tr class=\"name\"><td>{name}</td>")),
            "no row for {name}: {index}"
        );
    }
    assert!(index.contains("<svg id=\"latency-chart\""), "{index}");

    // Issue 48 item 3: the latency buckets of a name link to a recent trace in them; following
    // the first of request.bookstore's opens that trace with the request's event open.
    let row_start = index.find("<tr class=\"name\"><td>request.bookstore</td>").unwrap();
    let row = &index[row_start..row_start + index[row_start..].find("</tr>").unwrap()];
    let marker = "<a class=\"bucket\" href=\"";
    let at = row.find(marker).unwrap_or_else(|| panic!("no bucket link in {row}")) + marker.len();
    let href = row[at..at + row[at..].find('"').unwrap()].replace("&amp;", "&");
    let (path, fragment) = href.split_once('#').unwrap();
    let event = fragment.strip_prefix("event-").unwrap();
    assert!(path.ends_with(&format!("?open={event}")), "{href}");
    let bucket_view = chromium(profile.path(), &["--dump-dom", &format!("http://{addr}{href}")]);
    assert!(
        bucket_view.contains("<h1 id=\"trace-title\">request.bookstore</h1>"),
        "{bucket_view}"
    );
    assert!(
        bucket_view.contains(&format!(
            "<details class=\"event\" id=\"event-{event}\" data-depth=\"0\" open"
        )),
        "the bucket's event is open: {bucket_view}"
    );

    let url = format!("http://{addr}/trace/{trace_id}?open={open}");
    let view = chromium(profile.path(), &["--dump-dom", &url]);
    assert!(view.contains("<h1 id=\"trace-title\">request.bookstore</h1>"), "{view}");
    assert_eq!(
        view.matches("<details class=\"event\"").count() as u64,
        events,
        "{view}"
    );
    assert!(
        view.contains(&format!("<details class=\"event\" id=\"event-{open}\" data-depth=\"")),
        "{view}"
    );
    assert!(view.contains("INSERT INTO orders"), "{view}");
    assert!(view.contains("<span class=\"ev-name\" style=\"padding-left:6px\">request.bookstore</span>"));

    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("notify-web");
    std::fs::create_dir_all(&out).unwrap();
    screenshot(profile.path(), &url, &out.join("trace-view.png"));
    screenshot(profile.path(), &format!("http://{addr}/"), &out.join("index.png"));
    println!("screenshots in {}", out.display());

    // Still serving live data: new traces keep coming.
    let before = bookstore_traces(addr);
    std::thread::sleep(Duration::from_millis(1500));
    assert_ne!(bookstore_traces(addr), before, "no new trace in 1.5 s");
    assert!(bookstore.0.try_wait().unwrap().is_none(), "the bookstore exited");
}

fn bookstore_traces(addr: SocketAddr) -> Vec<String> {
    let traces: serde_json::Value = serde_json::from_str(&http_get(addr, "/api/traces")).unwrap();
    traces
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].to_string())
        .collect()
}
