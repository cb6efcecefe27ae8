//! The tracing -> notify bridge as instrumentation-setup installs it (issue 47 item 2): what a
//! tracing-instrumented library's span with an event inside it costs when the setup turns the
//! span into a notify event nested under the request (so it reaches the lines, exporters and the
//! live page), against the tracing stack's own subscribers and against notify's own call.
//!
//! Every case runs `info_span!(target: "sqlx::query", "query", db.statement = …)` entered, with
//! `info!(target: "sqlx::query", "fetched")` inside, or notify's equivalent:
//!
//! * `bridge/setup`: under `Setup::production()` (`RUST_LOG=info`): the global subscriber it
//!   installs (registry, notify-tracing's `NotifyLayer` for spans, its line writer for events,
//!   both filtered by `RUST_LOG`). Two JSON lines: the span's event line (notify-log's
//!   `StructuredLog`) and the event's line, with trace and span ids, into an in-memory buffer
//!   (cleared when it passes 1 MiB).
//! * `bridge/setup_in_request`: the same inside a notify event (`request.http`) opened once
//!   outside the loop: the span nests under it and carries its trace id, as hyper's and sqlx's
//!   spans do inside a request the setup serves.
//! * `bridge/notify_instrument_log`: notify's bare call under the same setup:
//!   `notify_core::instrument("query.sqlx::query", …)` with `log::info!` inside; two JSON lines.
//! * `bridge/fmt_json_sink`: `tracing_subscriber::fmt().json()` writing to `std::io::sink()`
//!   (one line, the event's, with the span's fields in it; fmt writes no line for spans by
//!   default).
//! * `bridge/fmt_sink`: `tracing_subscriber::fmt()` (text) writing to `std::io::sink()`.
//! * `bridge/registry`: `tracing_subscriber::registry()` with no layer (the floor of any
//!   tracing-subscriber setup: span ids and the span stack, no output).
//!
//! `cargo bench -p notify-bench --bench bridge -- --quick`. Results in docs/benchmarks.md.

use std::sync::{Arc, Mutex};

use criterion::{criterion_group, criterion_main, Criterion};
use instrumentation_setup::{Config, Setup};
use notify_core::Payload;

const SQL: &str = "SELECT id, title FROM books WHERE author = ?1";

fn tracing_span_and_event() {
    tracing::info_span!(target: "sqlx::query", "query", db.statement = SQL).in_scope(|| {
        tracing::info!(target: "sqlx::query", "fetched");
    });
}

fn notify_instrument_and_log() {
    notify_core::instrument(
        "query.sqlx::query",
        || Payload::new().with("db.statement", SQL),
        |_| log::info!(target: "sqlx::query", "fetched"),
    );
}

fn bridge(c: &mut Criterion) {
    let buffer = Arc::new(Mutex::new(Vec::with_capacity(2 << 20)));
    let _guard = Setup::production()
        .config(Config::from_vars([("RUST_LOG", "info")]).unwrap())
        .write_to(buffer.clone())
        .init()
        .expect("the setup starts");
    let trim = || {
        let mut lines = buffer.lock().unwrap();
        if lines.len() > 1 << 20 {
            lines.clear();
        }
    };
    let mut group = c.benchmark_group("bridge");
    group.bench_function("setup", |b| {
        b.iter(|| {
            tracing_span_and_event();
            trim();
        })
    });
    group.bench_function("setup_in_request", |b| {
        notify_core::instrument("request.http", Payload::new, |_| {
            b.iter(|| {
                tracing_span_and_event();
                trim();
            })
        })
    });
    group.bench_function("notify_instrument_log", |b| {
        b.iter(|| {
            notify_instrument_and_log();
            trim();
        })
    });
    let json = tracing_subscriber::fmt().json().with_writer(std::io::sink).finish();
    tracing::subscriber::with_default(json, || {
        group.bench_function("fmt_json_sink", |b| b.iter(tracing_span_and_event));
    });
    let text = tracing_subscriber::fmt().with_writer(std::io::sink).finish();
    tracing::subscriber::with_default(text, || {
        group.bench_function("fmt_sink", |b| b.iter(tracing_span_and_event));
    });
    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        group.bench_function("registry", |b| b.iter(tracing_span_and_event));
    });
    group.finish();
    let written = buffer.lock().unwrap().len();
    assert!(written > 0, "the setup wrote lines");
}

criterion_group!(benches, bridge);
criterion_main!(benches);
