//! Issue 47 item 3: a bridged tracing span's line has the span's tracing level (TRACE, DEBUG,
//! INFO, WARN, ERROR), and `RUST_LOG` filters it at that level: `warn` keeps a library's
//! `warn_span!` and `error_span!` and drops its `info_span!`; `app=debug` keeps `debug_span!` and
//! labels it `DEBUG`, drops `trace_span!`. One process, one setup.

use std::sync::{Arc, Mutex};

use instrumentation_setup::{Config, Setup};
use serde_json::Value;

#[test]
fn i47_3_bridged_spans_keep_their_tracing_level_and_rust_log_filters_them() {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let config = Config::from_vars([("RUST_LOG", "warn,app=debug")]).unwrap();
    let guard = Setup::production()
        .config(config)
        .write_to(buffer.clone())
        .init()
        .expect("set up");

    tracing::trace_span!(target: "app", "t").in_scope(|| {});
    tracing::debug_span!(target: "app", "d").in_scope(|| {});
    tracing::info_span!(target: "app", "i").in_scope(|| {});
    tracing::warn_span!(target: "app", "w").in_scope(|| {});
    tracing::error_span!(target: "app", "e").in_scope(|| {});
    tracing::debug_span!(target: "lib", "d").in_scope(|| {});
    tracing::info_span!(target: "lib", "i").in_scope(|| {});
    tracing::warn_span!(target: "lib", "w").in_scope(|| {});
    tracing::error_span!(target: "lib", "e").in_scope(|| {});
    // A notify event of the same shape is still `INFO` (and dropped under `warn`).
    notify_core::instrument("i.lib", notify_core::Payload::new, |_| ());
    notify_core::instrument("x.app", notify_core::Payload::new, |_| ());
    drop(guard);

    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    let lines: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (
                line["event"]
                    .as_str()
                    .unwrap_or_else(|| panic!("an event's line: {l}"))
                    .to_owned(),
                line["level"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("d.app", "DEBUG"),
        ("i.app", "INFO"),
        ("w.app", "WARN"),
        ("e.app", "ERROR"),
        ("w.lib", "WARN"),
        ("e.lib", "ERROR"),
        ("x.app", "INFO"),
    ];
    let expected: Vec<(String, String)> = expected.iter().map(|(e, l)| (e.to_string(), l.to_string())).collect();
    assert_eq!(lines, expected, "{text}");
}
