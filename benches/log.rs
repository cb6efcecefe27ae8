//! A JSON log line for one event with a 3-key payload, written to an in-memory sink (issue 37):
//!
//! * `export/notify_log_json`: `notifier.instrument("query.sql", …)` with notify-log's
//!   [`StructuredLog::json`] subscribed; the line goes through the `log` facade to a logger that
//!   appends it to a `Vec<u8>` (cleared when it passes 1 MiB). Everything the call costs is
//!   measured: ids, the two clock reads of the duration, the line, the sink.
//! * `export/notify_log_json_silenced`, `export/notify_log_rails_silenced` and
//!   `export/notify_unlistened`: the same call with the logger's level above the event's (debug
//!   under `info`) for the structured logger and for a Rails-style log subscriber, and on a
//!   notifier whose only subscription is to another name.
//! * `export/tracing_fmt_json`: `tracing::info!` with the same three fields under
//!   `tracing_subscriber::fmt().json()` writing to the same kind of sink.
//!
//! `cargo bench --bench log`; on a loaded machine add `-- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::io::Write;
use std::sync::Mutex;

use criterion::{criterion_group, criterion_main, Criterion};
use log::{LevelFilter, Log, Metadata, Record};
use notify_core::{Notifier, Payload};
use notify_log::{LogConfig, LogEvent, LogSubscriber, StructuredLog};

const SQL: &str = "SELECT id, title FROM books WHERE author = ?1 ORDER BY year";

/// Lines are appended here; cleared when it passes 1 MiB.
struct Sink(Mutex<Vec<u8>>);

impl Sink {
    fn append(&self, line: std::fmt::Arguments<'_>) {
        let mut sink = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if sink.len() > 1 << 20 {
            sink.clear();
        }
        let _ = sink.write_fmt(line);
    }
}

static LOG_SINK: Sink = Sink(Mutex::new(Vec::new()));
static TRACING_SINK: Sink = Sink(Mutex::new(Vec::new()));

/// The `log` logger of the notify side: every record to [`LOG_SINK`], one line each.
struct ToSink;

impl Log for ToSink {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        LOG_SINK.append(format_args!("{}\n", record.args()));
    }
    fn flush(&self) {}
}

/// tracing's writer: each formatted line to [`TRACING_SINK`].
struct TracingWriter;

impl Write for TracingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut sink = TRACING_SINK.0.lock().unwrap_or_else(|e| e.into_inner());
        if sink.len() > 1 << 20 {
            sink.clear();
        }
        sink.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A Rails-style log subscriber of `"query.sql"` at debug.
struct RailsSql;

impl LogSubscriber for RailsSql {
    fn config() -> LogConfig<RailsSql> {
        LogConfig::new("sql").method("query", log::Level::Debug, |_: &RailsSql, e: &LogEvent<'_>| {
            Some(format!("{} ({})  {}", e.method(), e.elapsed(), e.get("sql")?))
        })
    }
}

fn export(c: &mut Criterion) {
    log::set_logger(&ToSink).expect("the bench's only logger");
    log::set_max_level(LevelFilter::Debug);
    let mut group = c.benchmark_group("export");

    let notifier = Notifier::new();
    let logger = StructuredLog::json().build();
    let _subscription = logger.subscribe(&notifier, "query.sql");
    assert!(notifier.listening("query.sql"));
    notifier.instrument("query.sql", || Payload::new().with("rows", 3_u64), |_| ());
    assert_eq!(logger.written(), 1, "the line reaches the sink");
    group.bench_function("notify_log_json", |b| {
        b.iter(|| {
            notifier.instrument(
                black_box("query.sql"),
                || {
                    Payload::new()
                        .with("name", "Book Load")
                        .with("sql", SQL)
                        .with("rows", 3_u64)
                },
                |_| (),
            )
        })
    });

    // The same event at a level the logger drops (debug under max level info): silenced, it
    // should cost what an unlistened event costs.
    let quiet = Notifier::new();
    let _quiet = StructuredLog::json()
        .namespace_level("sql", log::Level::Debug)
        .build()
        .subscribe(&quiet, notify_core::Pattern::exact("query.sql"));
    // Not empty: a subscription to another name, so the name is looked up as for `quiet`.
    let unlistened = Notifier::new();
    let _other = StructuredLog::json().build().subscribe(&unlistened, "other.name");
    log::set_max_level(LevelFilter::Info);
    assert!(!quiet.listening("query.sql"));
    // The Rails-style log subscriber of the same event, silenced the same way: the reference.
    let rails = Notifier::new();
    let _rails = RailsSql.attach_to(&rails).expect("a valid configuration");
    assert!(!rails.listening("query.sql"));
    let cases = [
        ("notify_log_json_silenced", &quiet),
        ("notify_log_rails_silenced", &rails),
        ("notify_unlistened", &unlistened),
    ];
    for (case, notifier) in cases {
        group.bench_function(case, |b| {
            b.iter(|| {
                notifier.instrument(
                    black_box("query.sql"),
                    || {
                        Payload::new()
                            .with("name", "Book Load")
                            .with("sql", SQL)
                            .with("rows", 3_u64)
                    },
                    |_| (),
                )
            })
        });
    }
    log::set_max_level(LevelFilter::Debug);

    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(|| TracingWriter)
        .with_max_level(tracing::Level::INFO)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(target: "sql", rows = 3_u64, "query");
        assert!(!TRACING_SINK.0.lock().unwrap().is_empty(), "the line reaches the sink");
        group.bench_function("tracing_fmt_json", |b| {
            b.iter(|| tracing::info!(target: "sql", name = "Book Load", sql = black_box(SQL), rows = 3_u64, "query"))
        });
    });
    group.finish();
}

criterion_group!(benches, export);
criterion_main!(benches);
