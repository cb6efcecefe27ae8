//! What tests/otlp_*.rs share: the setup configured to export to a receiver (notify-opentelemetry's
//! tests/support/receiver.rs), requests made of a notify event, a tracing span of a library inside
//! it and a notify event inside that, and the checks on what the receiver got.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use instrumentation_setup::{Config, Guard, Setup};
use notify_core::Payload;

use crate::receiver::{Received, Receiver};

pub const SERVICE: &str = "setup-otlp-test";

/// The setup's production preset from `vars` (the service name and the headers added), lines
/// into the returned buffer.
pub fn init(vars: &[(&str, &str)]) -> (Guard, Arc<Mutex<Vec<u8>>>) {
    let mut all = vec![
        ("OTEL_SERVICE_NAME", SERVICE),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "x-tenant=acme%20co,Authorization=Bearer%20t0k3n",
        ),
    ];
    all.extend_from_slice(vars);
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let guard = Setup::production()
        .config(Config::from_vars(all).unwrap())
        .write_to(buffer.clone())
        .init()
        .expect("the setup starts");
    (guard, buffer)
}

/// Publishes `threads * per_thread` requests (numbered from 0) from `threads` plain threads and
/// waits for them.
pub fn publish_requests_from_threads(threads: u64, per_thread: u64) {
    let handles: Vec<_> = (0..threads)
        .map(|t| std::thread::spawn(move || (0..per_thread).for_each(|i| publish_request(t * per_thread + i))))
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

/// One request: `request.http` (notify), inside it the tracing span `query` of target
/// `sqlx::query` (bridged: `query.sqlx::query`), inside that `render.template` (notify).
pub fn publish_request(n: u64) {
    notify_core::instrument(
        "request.http",
        || Payload::new().with("request", n),
        |_| {
            tracing::info_span!(target: "sqlx::query", "query", db.statement = "SELECT 1").in_scope(|| {
                notify_core::instrument("render.template", Payload::new, |_| ());
            });
        },
    );
}

/// Waits (up to 30 s) until the receiver holds at least `n` spans.
pub fn wait_for(receiver: &Receiver, n: usize) -> Vec<Received> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let spans = receiver.spans();
        if spans.len() >= n || Instant::now() > deadline {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The receiver got `requests` whole requests: three spans each, in one trace per request, with
/// the parent ids of the nesting, `service.name`, and the headers of `OTEL_EXPORTER_OTLP_HEADERS`.
pub fn assert_requests_arrived(receiver: &Receiver, requests: usize) {
    let spans = wait_for(receiver, requests * 3);
    assert_eq!(spans.len(), requests * 3, "every span once");
    let by_id: HashMap<&[u8], &Received> = spans.iter().map(|s| (&s.span.span_id[..], s)).collect();
    assert_eq!(by_id.len(), spans.len(), "distinct span ids");
    let mut roots = 0;
    for received in &spans {
        assert_eq!(received.service_name.as_deref(), Some(SERVICE));
        let span = &received.span;
        let parent = (!span.parent_span_id.is_empty()).then(|| by_id[&span.parent_span_id[..]]);
        match span.name.as_str() {
            "request.http" => {
                assert!(parent.is_none(), "a root");
                roots += 1;
            }
            "query.sqlx::query" => {
                let parent = parent.expect("the library's span has a parent");
                assert_eq!(parent.span.name, "request.http");
                assert_eq!(parent.span.trace_id, span.trace_id);
                let statement = span.attributes.iter().find(|kv| kv.key == "db.statement");
                assert!(statement.is_some(), "the span's fields are attributes: {span:?}");
            }
            "render.template" => {
                let parent = parent.expect("nested");
                assert_eq!(parent.span.name, "query.sqlx::query");
                assert_eq!(parent.span.trace_id, span.trace_id);
            }
            other => panic!("unexpected span {other}"),
        }
    }
    assert_eq!(roots, requests);
    let traces: std::collections::HashSet<&[u8]> = spans.iter().map(|s| &s.span.trace_id[..]).collect();
    assert_eq!(traces.len(), requests, "one trace per request");
    assert_eq!(receiver.header("x-tenant").as_deref(), Some("acme co"));
    assert_eq!(receiver.header("authorization").as_deref(), Some("Bearer t0k3n"));
}

/// No line of the setup's output is a warning or an error (a failed export is one).
pub fn assert_no_warnings(buffer: &Mutex<Vec<u8>>) {
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    for line in text.lines() {
        assert!(
            !line.contains(r#""level":"WARN""#) && !line.contains(r#""level":"ERROR""#),
            "{line}"
        );
    }
}
