//! WebServer: routes, escaping of planted markup, the token.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Subscription};
use notify_web::{TraceRecorder, WebOptions, WebServer};

/// One request over a fresh connection (HTTP/1.0, so the server closes it): status line,
/// headers and body.
fn get(addr: SocketAddr, method: &str, target: &str, headers: &[&str]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!("{method} {target} HTTP/1.0\r\nHost: {addr}\r\n");
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

fn attach(notifier: &Notifier, recorder: &TraceRecorder) -> Subscription {
    let r = recorder.clone();
    notifier.subscribe(Pattern::all(), Subscriber::event(move |e: &Event| r.record(e)))
}

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(2)>";

#[test]
fn planted_markup_in_names_and_payloads_is_inert_in_every_page() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let _s = attach(&notifier, &recorder);
    let root_name = format!("{SCRIPT}.{IMG}");
    let child_name = format!("{IMG}.sql");
    notifier.instrument(
        &root_name,
        || Payload::new().with("path", SCRIPT),
        |_| {
            notifier.instrument(
                &child_name,
                || {
                    Payload::new()
                        .with("sql", IMG)
                        .with("<b>key</b>", "'single' & \"double\"")
                },
                |_| (),
            );
        },
    );
    let trace_id = recorder.traces()[0].trace_id();
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    for target in ["/".to_owned(), format!("/trace/{trace_id}")] {
        let (status, head, body) = get(addr, "GET", &target, &[]);
        assert_eq!(status, 200, "{target}");
        assert!(head.contains("Content-Type: text/html; charset=utf-8"), "{head}");
        assert!(head.contains("Content-Security-Policy: default-src 'none'"), "{head}");
        let lower = body.to_ascii_lowercase();
        assert!(!lower.contains("<script"), "{target}: a script tag got through");
        assert!(!lower.contains("<img"), "{target}: an img tag got through");
        assert!(
            !body.contains("alert(2)>") && !body.contains("\"><img"),
            "{target}: an attribute was closed"
        );
        assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{target}");
        assert!(
            body.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"),
            "{target}"
        );
    }
    let (_, _, trace) = get(addr, "GET", &format!("/trace/{trace_id}"), &[]);
    assert!(trace.contains("&lt;b&gt;key&lt;/b&gt;"));
    assert!(trace.contains("&#x27;single&#x27; &amp; &quot;double&quot;"), "{trace}");
    // The JSON carries the text as it is (JSON-escaped, served as application/json).
    let (status, head, json) = get(addr, "GET", &format!("/api/trace/{trace_id}"), &[]);
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: application/json"));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["events"][0]["name"], format!("{SCRIPT}.{IMG}"));
    assert_eq!(value["events"][1]["payload"][0][1], IMG);
    server.stop();
}

#[test]
fn routes_answer_json_and_clear_errors() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let _s = attach(&notifier, &recorder);
    notifier.instrument("request.app", Payload::new, |_| {
        notifier.instrument("query.sql", Payload::new, |_| ());
    });
    let trace_id = recorder.traces()[0].trace_id();
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();

    let (status, _, body) = get(addr, "GET", "/api/traces", &[]);
    assert_eq!(status, 200);
    let traces: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(traces[0]["trace_id"], trace_id.to_string());
    assert_eq!(traces[0]["root"], "request.app");
    assert_eq!(
        (traces[0]["event_count"].as_u64(), traces[0]["complete"].as_bool()),
        (Some(2), Some(true))
    );

    let (status, _, body) = get(addr, "GET", &format!("/api/trace/{trace_id}"), &[]);
    assert_eq!(status, 200);
    let trace: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<(&str, u64)> = trace["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["depth"].as_u64().unwrap()))
        .collect();
    assert_eq!(names, [("request.app", 0), ("query.sql", 1)]);
    assert_eq!(trace["events"][0]["offset_ns"], 0);

    let (status, _, body) = get(addr, "GET", "/api/stats", &[]);
    assert_eq!(status, 200);
    let stats: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(stats["names"][0]["name"], "query.sql");
    assert_eq!(stats["names"][1]["count"], 1);
    assert_eq!(stats["counts"]["events"], 2);
    assert_eq!(stats["window_ns"], 60_000_000_000_u64);

    let (status, _, body) = get(addr, "GET", "/", &[]);
    assert_eq!(status, 200);
    assert!(
        body.contains(&format!("<a href=\"/trace/{trace_id}\">request.app</a>")),
        "{body}"
    );
    assert!(body.contains("<svg id=\"latency-chart\""));

    let (status, _, body) = get(addr, "GET", "/trace/xyz", &[]);
    assert_eq!(status, 400);
    assert_eq!(
        body,
        "400 Bad Request: a trace id is 32 hex digits, not all zero: \"xyz\"\n"
    );
    let missing = "0000000000000000000000000000abcd";
    let (status, _, body) = get(addr, "GET", &format!("/trace/{missing}"), &[]);
    assert_eq!(
        (status, body.as_str()),
        (404, &*format!("404 Not Found: no trace {missing} is kept\n"))
    );
    let (status, _, _) = get(addr, "GET", "/nope", &[]);
    assert_eq!(status, 404);
    let (status, head, _) = get(addr, "POST", "/", &["Content-Length: 0"]);
    assert_eq!(status, 405);
    assert!(head.contains("Allow: GET, HEAD"));
    let (status, _, body) = get(addr, "HEAD", "/", &[]);
    assert_eq!((status, body.as_str()), (200, ""));
}

#[test]
fn a_token_is_required_when_configured() {
    let recorder = TraceRecorder::new(WebOptions::new().token("s3cret-token"));
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    let (status, _, body) = get(addr, "GET", "/", &[]);
    assert_eq!(status, 401);
    assert!(body.starts_with("401 Unauthorized: this page needs its token"));
    for wrong in ["/?token=s3cret-tokeN", "/?token=", "/?token=s3cret-token-and-more"] {
        assert_eq!(get(addr, "GET", wrong, &[]).0, 401, "{wrong}");
    }
    assert_eq!(get(addr, "GET", "/api/stats", &["Authorization: Bearer wrong"]).0, 401);

    let (status, head, _) = get(addr, "GET", "/?a=1&token=s3cret-token", &[]);
    assert_eq!(status, 200);
    assert!(
        head.contains("Set-Cookie: notify_web_token=s3cret-token; HttpOnly; SameSite=Strict; Path=/"),
        "{head}"
    );
    assert_eq!(
        get(addr, "GET", "/api/stats", &["Authorization: Bearer s3cret-token"]).0,
        200
    );
    assert_eq!(
        get(
            addr,
            "GET",
            "/api/traces",
            &["Cookie: a=b; notify_web_token=s3cret-token"]
        )
        .0,
        200
    );
    assert_eq!(
        get(addr, "GET", "/api/traces", &["Cookie: notify_web_token=nope"]).0,
        401
    );
}

/// A token with bytes a URL or a cookie cannot carry as they are: given URL-encoded in the query,
/// kept percent-encoded in the cookie, given as it is in the bearer header (HTTP header values are
/// ASCII, so the token is; a non-ASCII one works in the query and the cookie).
#[test]
fn a_token_with_reserved_characters_works_url_encoded() {
    let token = "s3cr+t &=;,%\"";
    let recorder = TraceRecorder::new(WebOptions::new().token(token));
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    let encoded = "s3cr%2Bt%20%26%3D%3B%2C%25%22";
    let (status, head, _) = get(addr, "GET", &format!("/?token={encoded}"), &[]);
    assert_eq!(status, 200, "{head}");
    let cookie = "notify_web_token=s3cr+t%20&=%3B%2C%25%22";
    assert!(
        head.contains(&format!("Set-Cookie: {cookie}; HttpOnly; SameSite=Strict; Path=/")),
        "{head}"
    );
    assert_eq!(get(addr, "GET", "/api/stats", &[&format!("Cookie: {cookie}")]).0, 200);
    // Form encoding: `+` is a space, so the raw `+` of the token must be sent as %2B.
    assert_eq!(get(addr, "GET", "/?token=s3cr+t%20%26%3D%3B%2C%25%22", &[]).0, 401);
    assert_eq!(
        get(addr, "GET", "/api/stats", &[&format!("Authorization: Bearer {token}")]).0,
        200,
        "the bearer token is compared as it is"
    );
    // Undecodable escapes are not an error page: the token just does not match.
    assert_eq!(get(addr, "GET", "/?token=%ZZ%C3", &[]).0, 401);

    let recorder = TraceRecorder::new(WebOptions::new().token("é-token"));
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    let (status, head, _) = get(addr, "GET", "/?token=%C3%A9-token", &[]);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("Set-Cookie: notify_web_token=%C3%A9-token;"), "{head}");
    assert_eq!(get(addr, "GET", "/", &["Cookie: notify_web_token=%C3%A9-token"]).0, 200);
}

/// Issue 35 item 6: a request that arrived with a W3C `traceparent` makes a local root whose
/// parent is in another process; its trace has no event without a parent.
#[test]
fn a_trace_continued_from_a_traceparent_is_complete_when_its_local_root_ends() {
    use notify_core::{event::EventId, Context, TraceId};
    use std::time::Duration;

    let notifier = Notifier::new();
    // A wait far longer than the test: completion must come from the remote mark, not the wait.
    let recorder = TraceRecorder::new(WebOptions::new().remote_root_wait(Duration::from_secs(3600)));
    let _s = attach(&notifier, &recorder);
    let trace_id: TraceId = "4bf92f3577b34da6a3ce929d0e0e4736".parse().unwrap();
    let caller = Context::remote(trace_id, EventId::new(0x00f0_67aa_0ba9_02b7), true);
    caller.in_scope(|| {
        notifier.instrument("request.http", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| ());
        });
    });
    let traces = recorder.traces();
    assert_eq!(traces.len(), 1);
    assert!(traces[0].is_complete());
    let root = traces[0].root().unwrap();
    assert_eq!((root.name(), root.parent_is_remote()), ("request.http", true));
    assert_eq!(recorder.counts().pending_traces, 0);
}

#[test]
fn a_trace_whose_local_root_has_a_remote_parent_is_listed_complete_with_its_root() {
    use notify_core::{event::EventId, Context, TraceId};
    use std::time::Duration;

    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().remote_root_wait(Duration::from_millis(100)));
    let _s = attach(&notifier, &recorder);
    let trace_id: TraceId = "4bf92f3577b34da6a3ce929d0e0e4736".parse().unwrap();
    // The remote parent: an event id that never appears in this process.
    let remote = Context::new(trace_id, Some(EventId::new(0x00f0_67aa_0ba9_02b7)));
    remote.in_scope(|| {
        notifier.instrument("request.http", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| ());
        });
    });
    // Before the wait it is unfinished: a local parent could still be running.
    let pending = recorder.trace(trace_id).unwrap();
    assert!(!pending.is_complete());
    assert!(recorder.traces().is_empty());
    std::thread::sleep(Duration::from_millis(150));

    let traces = recorder.traces();
    assert_eq!(traces.len(), 1);
    assert!(traces[0].is_complete());
    let root = traces[0].root().unwrap();
    assert_eq!(
        (root.name(), root.parent_id()),
        ("request.http", Some(EventId::new(0x00f0_67aa_0ba9_02b7)))
    );
    assert_eq!(recorder.counts().pending_traces, 0);

    let server = WebServer::start("127.0.0.1:0", recorder.clone()).unwrap();
    let addr = server.local_addr();
    let (status, _, body) = get(addr, "GET", "/api/traces", &[]);
    assert_eq!(status, 200);
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["trace_id"], trace_id.to_string());
    assert_eq!(listed[0]["root"], "request.http");
    assert_eq!(listed[0]["complete"], true);
    assert_eq!(listed[0]["event_count"], 2);

    let (status, _, body) = get(addr, "GET", &format!("/api/trace/{trace_id}"), &[]);
    assert_eq!(status, 200);
    let trace: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (trace["root"].as_str(), trace["complete"].as_bool()),
        (Some("request.http"), Some(true))
    );
    let tree: Vec<(&str, u64)> = trace["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["depth"].as_u64().unwrap()))
        .collect();
    assert_eq!(tree, [("request.http", 0), ("query.sql", 1)]);

    let (status, _, body) = get(addr, "GET", "/", &[]);
    assert_eq!(status, 200);
    assert!(
        body.contains(&format!("<a href=\"/trace/{trace_id}\">request.http</a>")),
        "{body}"
    );
}

/// The recorder sees only finished events: a local parent that finishes after the wait joins
/// the trace and becomes its root.
#[test]
fn a_local_root_finishing_after_the_wait_joins_the_trace_and_becomes_its_root() {
    use notify_core::{event::EventId, Context, TraceId};
    use std::time::Duration;

    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().remote_root_wait(Duration::from_millis(50)));
    let _s = attach(&notifier, &recorder);
    let trace_id = TraceId::new(77).unwrap();
    Context::new(trace_id, Some(EventId::new(5))).in_scope(|| {
        notifier.instrument("request.http", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| ());
            std::thread::sleep(Duration::from_millis(100));
            // The child, alone past the wait, was taken as the trace's root meanwhile.
            let early = recorder.traces();
            assert_eq!(early[0].root().unwrap().name(), "query.sql");
        });
    });
    let traces = recorder.traces();
    assert_eq!(traces.len(), 1);
    assert_eq!(traces[0].root().unwrap().name(), "request.http");
    assert_eq!(traces[0].events().len(), 2);
    assert!(traces[0].is_complete());
}

/// The page writes event ids as the JSON does (16 hex digits), and `?open=` takes that form
/// (which is also `EventId`'s `Display`).
#[test]
fn open_takes_the_event_id_as_the_json_writes_it() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let _s = attach(&notifier, &recorder);
    notifier.instrument("request.app", Payload::new, |_| {
        notifier.instrument("query.sql", || Payload::new().with("sql", "SELECT 1"), |_| ());
    });
    let trace = recorder.traces()[0].clone();
    let child = trace.events().iter().find(|e| e.name() == "query.sql").unwrap().id();
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    let (_, _, json) = get(addr, "GET", &format!("/api/trace/{}", trace.trace_id()), &[]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let hex = json["events"][1]["id"].as_str().unwrap().to_owned();
    assert_eq!(hex, format!("{:016x}", child.get()));
    for open in [hex.clone(), child.to_string()] {
        let (status, _, page) = get(addr, "GET", &format!("/trace/{}?open={open}", trace.trace_id()), &[]);
        assert_eq!(status, 200);
        assert!(
            page.contains(&format!(
                "<details class=\"event\" id=\"event-{hex}\" data-depth=\"1\" open>"
            )),
            "?open={open}: {page}"
        );
        assert_eq!(page.matches(" open><summary>").count(), 1, "one event open");
    }
}
