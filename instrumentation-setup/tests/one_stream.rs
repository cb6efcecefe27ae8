//! Issue 47 item 2: the application's `log` and tracing lines and the events' lines are one
//! stream in one format, with the current trace and span ids; tracing spans nest under the
//! current notify event. One process, one setup (it installs the process' globals).

use std::sync::{Arc, Mutex};

use instrumentation_setup::{Config, Setup};
use notify_core::{Context, Payload};
use serde_json::Value;

#[test]
fn i47_2_log_and_tracing_lines_share_the_events_format_and_ids() {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let config = Config::from_vars([("RUST_LOG", "debug")]).unwrap();
    let guard = Setup::production()
        .config(config)
        .write_to(buffer.clone())
        .init()
        .expect("set up");

    log::info!(target: "before", "outside any request");
    let (trace, span) = notify_core::instrument(
        "request.http",
        || Payload::new().with("url.path", "/books/7"),
        |_| {
            let context = Context::current();
            log::warn!(target: "catalog", "price missing");
            tracing::info!(target: "catalog", book = 7_u64, "from tracing");
            tracing::info_span!(target: "sqlx::query", "query").in_scope(|| {
                tracing::debug!(target: "sqlx::query", "inside a library span");
            });
            (
                context.trace_id().unwrap().to_string(),
                format!("{:016x}", context.event_id().unwrap().get()),
            )
        },
    );
    drop(guard);

    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object per line: {e}: {l}")))
        .collect();
    let find = |key: &str, value: &str| {
        lines
            .iter()
            .find(|l| l[key] == value)
            .unwrap_or_else(|| panic!("no line with {key}={value} in:\n{text}"))
    };
    let outside = find("message", "outside any request");
    assert_eq!(outside["level"], "INFO");
    assert!(outside.get("trace_id").is_none(), "{outside}");

    let logged = find("message", "price missing");
    assert_eq!(logged["level"], "WARN");
    assert_eq!(logged["target"], "catalog");
    assert_eq!(logged["trace_id"], trace.as_str());
    assert_eq!(logged["span_id"], span.as_str());
    assert!(logged["timestamp"].as_str().unwrap().ends_with('Z'));

    let traced = find("message", "from tracing");
    assert_eq!(traced["trace_id"], trace.as_str());
    assert_eq!(traced["span_id"], span.as_str());
    assert_eq!(traced["fields"]["book"], 7);

    // The library's span is a notify event under the request, in its trace; the event inside it
    // has the span's own id.
    let query = find("event", "query.sqlx::query");
    assert_eq!(query["trace_id"], trace.as_str());
    assert_eq!(query["parent_id"], span.as_str());
    let inner = find("message", "inside a library span");
    assert_eq!(inner["trace_id"], trace.as_str());
    assert_eq!(inner["span_id"], query["span_id"]);

    let request = find("event", "request.http");
    assert_eq!(request["span_id"], span.as_str());
    assert_eq!(request["payload"]["url.path"], "/books/7");
    // Every line of the stream: the events' and the records' use one key for each fact.
    for line in &lines {
        assert!(line.get("timestamp").is_some() && line.get("level").is_some(), "{line}");
    }
}
