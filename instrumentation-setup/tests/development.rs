//! Issue 47 item 1: the development preset's Rails-style lines, for the events and the
//! application's own lines, with the default `RUST_LOG` (`info,sql=debug`). One process, one setup.

use std::sync::{Arc, Mutex};

use instrumentation_setup::{Config, LogFormat, Setup};
use notify_core::{Context, Payload};

#[test]
fn i47_1_development_lines_are_rails_style() {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let guard = Setup::development()
        .config(Config::from_vars([]).unwrap())
        .write_to(buffer.clone())
        .init()
        .expect("set up");
    assert_eq!(guard.log_format(), LogFormat::Dev);
    let request = || {
        Payload::new()
            .with("http.request.method", "GET")
            .with("http.route", "/books/{id}")
            .with("url.path", "/books/7")
    };
    let trace = notify_core::instrument("request.http", request, |payload| {
        let sql = || {
            Payload::new()
                .with("name", "Book Load")
                .with("sql", "SELECT * FROM books WHERE id = ?1")
                .with("binds", vec![7])
        };
        notify_core::instrument("query.sql", sql, |_| ());
        notify_core::instrument("load.cache", || Payload::new().with("hit", true), |_| ());
        log::info!(target: "catalog", "book 7 found");
        log::debug!(target: "catalog", "not shown at info");
        payload.insert("http.response.status_code", 200_u16);
        Context::current().trace_id().unwrap().to_string()
    });
    drop(guard);
    let short = &trace[..8];
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(!text.contains('\u{1b}'), "no colour into a buffer: {text:?}");
    let ms = r"\d+\.\dms";
    let expected = [
        format!(r"^  Book Load \({ms}\)  SELECT \* FROM books WHERE id = \?1  \[7\]$"),
        format!(r"^  load\.cache \({ms}\) hit=true$"),
        format!(r"^INFO catalog: book 7 found  trace {short}$"),
        format!(r"^Completed 200 OK in {ms} \(GET /books/\{{id\}}\) trace {short}$"),
    ];
    for (line, pattern) in lines.iter().zip(&expected) {
        let regex = regex_lite::Regex::new(pattern).unwrap();
        assert!(regex.is_match(line), "{line:?} does not match {pattern:?}\n{text}");
    }
}
