//! Exporting events to OpenTelemetry (issue 38): what one event with two fields costs the
//! instrumenting thread, notify against tracing + tracing-opentelemetry and fastrace +
//! fastrace-opentelemetry, each into a do-nothing `SpanExporter`, with the nobody-listening
//! references, in one run.
//!
//! Criterion groups (ns per event on the calling thread):
//! * `export/notify_opentelemetry`: `Notifier::instrument` with notify-opentelemetry subscribed
//!   (`Overflow::Block`: nothing dropped, the producer is paced by the exporter thread);
//!   `export/notify_opentelemetry_drop_newest`: the default policy (under a sustained flood it drops,
//!   counted; the table says how many); `export/notify_opentelemetry_callsite`: the same event
//!   through a `static Callsite` on the global notifier (no lookup by name; tracing's macros have
//!   such a callsite too).
//! * `export/tracing_opentelemetry`: a `tracing` span (Registry + tracing-opentelemetry layer, SDK
//!   batch processor with its defaults).
//! * `export/fastrace_opentelemetry`: a fastrace root span (fastrace-opentelemetry reporter, default
//!   collector config).
//! * `export/notify_nats_enqueue`: the same event with notify-nats' exporter subscribed, to a
//!   `nats-server` the bench starts on a free loopback port (`Overflow::Block`: nothing dropped,
//!   the producer is paced by the exporter's thread); skipped, with a note, when `nats-server` is
//!   not installed. benches/nats.rs measures NATS end to end.
//! * `export/notify_event_noop`: the floor of making the event at all, the same event to a
//!   do-nothing event-object subscriber (built on the stack, nothing shared, nothing handed off).
//! * `export/notify_owned_noop`: the floor of any owned-event exporter, the same event to a
//!   do-nothing owned subscriber (notify-core builds the shared `Arc<Event>`, nothing queues it).
//! * `export/nobody_notify`, `export/nobody_tracing`, `export/nobody_fastrace`: the same calls with
//!   nobody listening.
//!
//! After criterion, a table measures N events per case (default 200,000;
//! `NOTIFY_EXPORT_EVENTS=N`, 0 for none; alone, with a filter that names no case:
//! `NOTIFY_EXPORT_EVENTS=1000000 cargo bench --bench export -- table_only`): calling-thread CPU and process CPU per event (until everything was
//! handed to the SpanExporter: flushed), and how many of the N reached it; with
//! `NOTIFY_EXPORT_TABLE_JSON=PATH` also as JSON lines to PATH (what `scripts/bench-report --export`
//! reads).
//!
//! ```sh
//! cargo bench --bench export -- --warm-up-time 1 --measurement-time 3
//! # instructions on the calling thread only (the exporter threads are not counted):
//! NOTIFY_EXPORT_CALLGRIND=notify cargo bench --bench export --no-run  # then, with the printed binary:
//! NOTIFY_EXPORT_CALLGRIND=notify valgrind --tool=callgrind --toggle-collect='export::calling_thread*' target/release/deps/export-HASH
//! ```
//! `NOTIFY_EXPORT_CALLGRIND` = `notify`, `notify_callsite`, `event_noop`, `owned_noop`, `nats`, `tracing`, `fastrace` or `nobody_notify` runs only that
//! case's loop (100,000 events) and exits; divide the collected instructions by 100,000.

#[path = "../notify-nats/tests/support/mod.rs"]
mod support;

use std::borrow::Cow;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cpu_time::{ProcessTime, ThreadTime};
use criterion::Criterion;
use fastrace::collector::{Config, SpanContext as FastraceContext};
use fastrace::Span as FastraceSpan;
use notify_core::export::Overflow;
use notify_core::{event::Callsite, Notifier, Pattern, Payload, Value};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use tracing_subscriber::prelude::*;

const SQL: &str = "SELECT id, title FROM books WHERE author = ?1 ORDER BY year";

/// The statement as a payload value borrowed for `'static` (`Value::from_static`: no copy per
/// event), as fastrace's `Cow::Borrowed` below. A plain `&str` would be copied into the payload
/// (59 bytes: an allocation on the calling thread and a free on the exporter's).
const SQL_VALUE: Value = Value::from_static(SQL);

/// A SpanExporter that does nothing but count the spans it was given.
#[derive(Clone, Debug, Default)]
struct Nothing(Arc<AtomicU64>);

impl SpanExporter for Nothing {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl Nothing {
    fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[inline(always)]
fn notify_event(notifier: &Notifier, i: u64) {
    notifier.instrument(
        "request.export",
        || Payload::new().with("sql", SQL_VALUE).with("rows", i),
        |_| black_box(()),
    );
}

/// The event through a `static Callsite` (as tracing's `info_span!` has one), on the global
/// notifier: no lookup by name.
static SITE: Callsite = Callsite::new("request.export_site");

#[inline(always)]
fn notify_site_event(i: u64) {
    SITE.instrument(
        || Payload::new().with("sql", SQL_VALUE).with("rows", i),
        |_| black_box(()),
    );
}

#[inline(always)]
fn tracing_span(i: u64) {
    tracing::info_span!("request", sql = SQL, rows = i).in_scope(|| black_box(()));
}

#[inline(always)]
fn fastrace_span(i: u64) {
    let root = FastraceSpan::root("request", FastraceContext::random())
        .with_properties(|| [("sql", Cow::Borrowed(SQL)), ("rows", Cow::Owned(i.to_string()))]);
    let _guard = root.set_local_parent();
    black_box(());
}

/// The calling-thread loops, not inlined, so callgrind's `--toggle-collect` can count them alone.
#[inline(never)]
fn calling_thread_notify(notifier: &Notifier, n: u64) {
    for i in 0..n {
        notify_event(notifier, i);
    }
}

#[inline(never)]
fn calling_thread_notify_site(n: u64) {
    for i in 0..n {
        notify_site_event(i);
    }
}

#[inline(never)]
fn calling_thread_tracing(n: u64) {
    for i in 0..n {
        tracing_span(i);
    }
}

#[inline(never)]
fn calling_thread_fastrace(n: u64) {
    for i in 0..n {
        fastrace_span(i);
    }
}

/// notify-opentelemetry into `sink`, subscribed to everything on a new notifier.
fn notify_pipeline(sink: &Nothing, policy: Overflow) -> (Notifier, OpenTelemetryExporter) {
    let mut builder = OpenTelemetryExporter::builder(sink.clone())
        .overflow(policy)
        .on_drops(|_| {});
    // `NOTIFY_EXPORT_QUEUE=N`: the queue per publishing thread (default 8,192), to see what the
    // working set of events in flight costs the calling thread (docs/benchmarks.md).
    if let Some(capacity) = std::env::var("NOTIFY_EXPORT_QUEUE").ok().and_then(|v| v.parse().ok()) {
        builder = builder.queue_capacity(capacity);
    }
    let exporter = builder.build();
    let notifier = Notifier::new();
    // The subscription lives as long as the notifier's registry holds it (dropping the handle
    // does not unsubscribe).
    let _ = exporter.subscribe(&notifier, Pattern::all());
    (notifier, exporter)
}

/// The floor of any owned-event exporter: a subscriber that takes the shared event and does
/// nothing with it (notify-core still builds the `Arc<Event>`; dropped at once, on this thread).
struct Noop;

impl notify_core::OwnedEventSubscriber for Noop {
    fn deliver(&self, event: &Arc<notify_core::Event>) {
        black_box(event);
    }
}

/// The floor of making the event at all: the same event to a do-nothing event-object subscriber
/// (built on the calling thread's stack, no `Arc`, nothing handed off): clocks, ids, the lookup,
/// the payload. An exporter's calling-thread cost is this plus its hand-off.
fn event_noop_notifier() -> Notifier {
    let notifier = Notifier::new();
    let _ = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(|event: &notify_core::Event| {
            black_box(event);
        }),
    );
    notifier
}

/// A notifier with one do-nothing owned subscriber on everything.
fn owned_noop_notifier() -> Notifier {
    let notifier = Notifier::new();
    let _ = notifier.subscribe(Pattern::all(), notify_core::Subscriber::owned(Noop));
    notifier
}

/// notify-opentelemetry into `sink`, subscribed to the callsite's name on the global notifier
/// (`Wait` policy); unsubscribe with the returned subscription.
fn notify_site_pipeline(sink: &Nothing) -> (notify_core::Subscription, OpenTelemetryExporter) {
    let exporter = OpenTelemetryExporter::builder(sink.clone())
        .overflow(WAIT)
        .on_drops(|_| {})
        .build();
    let subscription = exporter.subscribe(Notifier::global(), Pattern::from("request.export_site"));
    (subscription, exporter)
}

/// notify-nats' exporter to `server`, subscribed to everything on a new notifier
/// (`Overflow::Block`).
fn nats_pipeline(server: &support::NatsServer) -> (Notifier, notify_nats::Exporter) {
    let exporter = notify_nats::Exporter::builder(notify_nats::NatsOptions::new(server.url()))
        .prefix("export_bench")
        .overflow(notify_core::export::Overflow::Block)
        .start()
        .expect("the NATS exporter connects to the bench's nats-server");
    let notifier = Notifier::new();
    let _ = notifier.subscribe(Pattern::all(), exporter.subscriber());
    (notifier, exporter)
}

/// A `nats-server` for the NATS case, when the binary is installed.
fn nats_server() -> Option<support::NatsServer> {
    let installed = std::process::Command::new("nats-server")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !installed {
        eprintln!("export: nats-server is not installed: export/notify_nats_enqueue skipped");
        return None;
    }
    Some(support::NatsServer::start())
}

/// tracing-opentelemetry into `sink` through the SDK's batch processor (defaults).
fn tracing_pipeline(sink: &Nothing) -> (SdkTracerProvider, tracing::Dispatch) {
    let provider = SdkTracerProvider::builder().with_batch_exporter(sink.clone()).build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")));
    (provider, tracing::Dispatch::new(subscriber))
}

/// fastrace-opentelemetry into `sink` (process-wide: once).
fn fastrace_pipeline(sink: &Nothing) {
    let reporter = fastrace_opentelemetry::OpenTelemetryReporter::new(
        sink.clone(),
        Cow::Owned(Resource::builder_empty().build()),
        InstrumentationScope::builder("bench").build(),
    );
    fastrace::set_reporter(reporter, Config::default());
}

const WAIT: Overflow = Overflow::Block;

fn bench(c: &mut Criterion, fastrace_sink: &Nothing) {
    let mut group = c.benchmark_group("export");

    // Nobody listening.
    let quiet = Notifier::new();
    let mut i = 0_u64;
    group.bench_function("nobody_notify", |b| {
        b.iter(|| {
            i += 1;
            notify_event(&quiet, i)
        })
    });
    group.bench_function("nobody_tracing", |b| {
        b.iter(|| {
            i += 1;
            tracing_span(i)
        })
    });
    // Before the reporter is set: fastrace collects nothing.
    group.bench_function("nobody_fastrace", |b| {
        b.iter(|| {
            i += 1;
            fastrace_span(i)
        })
    });

    let event_floor = event_noop_notifier();
    group.bench_function("notify_event_noop", |b| {
        b.iter(|| {
            i += 1;
            notify_event(&event_floor, i)
        })
    });

    let floor = owned_noop_notifier();
    group.bench_function("notify_owned_noop", |b| {
        b.iter(|| {
            i += 1;
            notify_event(&floor, i)
        })
    });

    let sink = Nothing::default();
    let (notifier, exporter) = notify_pipeline(&sink, WAIT);
    group.bench_function("notify_opentelemetry", |b| {
        b.iter(|| {
            i += 1;
            notify_event(&notifier, i)
        })
    });
    let _ = exporter.shutdown(Duration::from_secs(30));

    let sink = Nothing::default();
    let (subscription, exporter) = notify_site_pipeline(&sink);
    group.bench_function("notify_opentelemetry_callsite", |b| {
        b.iter(|| {
            i += 1;
            notify_site_event(i)
        })
    });
    let _ = subscription.unsubscribe();
    let _ = exporter.shutdown(Duration::from_secs(30));

    let sink = Nothing::default();
    let (notifier, exporter) = notify_pipeline(&sink, Overflow::DropNewest);
    group.bench_function("notify_opentelemetry_drop_newest", |b| {
        b.iter(|| {
            i += 1;
            notify_event(&notifier, i)
        })
    });
    let _ = exporter.shutdown(Duration::from_secs(30));

    if let Some(server) = nats_server() {
        let (notifier, exporter) = nats_pipeline(&server);
        group.bench_function("notify_nats_enqueue", |b| {
            b.iter(|| {
                i += 1;
                notify_event(&notifier, i)
            })
        });
        let _ = exporter.shutdown(Duration::from_secs(30));
    }

    let sink = Nothing::default();
    let (provider, dispatch) = tracing_pipeline(&sink);
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function("tracing_opentelemetry", |b| {
            b.iter(|| {
                i += 1;
                tracing_span(i)
            })
        });
    });
    let _ = provider.shutdown();

    fastrace_pipeline(fastrace_sink);
    group.bench_function("fastrace_opentelemetry", |b| {
        b.iter(|| {
            i += 1;
            fastrace_span(i)
        })
    });
    fastrace::flush();
    group.finish();
}

/// One row of the table: `n` events of a case.
struct Row {
    case: &'static str,
    thread_ns: f64,
    process_ns: f64,
    delivered: u64,
    note: String,
}

fn measure(case: &'static str, n: u64, run: impl FnOnce(u64), settle: impl FnOnce() -> (u64, String)) -> Row {
    let process = ProcessTime::now();
    let thread = ThreadTime::now();
    run(n);
    let thread_ns = thread.elapsed().as_nanos() as f64 / n as f64;
    let (delivered, note) = settle();
    let process_ns = process.elapsed().as_nanos() as f64 / n as f64;
    Row {
        case,
        thread_ns,
        process_ns,
        delivered,
        note,
    }
}

fn table(n: u64, fastrace_sink: &Nothing) {
    let mut rows = Vec::new();
    rows.push(measure(
        "nobody_notify",
        n,
        |n| calling_thread_notify(&Notifier::new(), n),
        || (0, String::new()),
    ));
    let event_floor = event_noop_notifier();
    rows.push(measure(
        "notify_event_noop",
        n,
        |n| calling_thread_notify(&event_floor, n),
        || (n, "floor: the event itself, nothing handed off".to_owned()),
    ));
    let owned_floor = owned_noop_notifier();
    rows.push(measure(
        "notify_owned_noop",
        n,
        |n| calling_thread_notify(&owned_floor, n),
        || (n, "floor: a new Arc<Event> per event, dropped at once".to_owned()),
    ));
    for (case, policy) in [
        ("notify_opentelemetry", WAIT),
        ("notify_opentelemetry_drop_newest", Overflow::DropNewest),
    ] {
        let sink = Nothing::default();
        let (notifier, exporter) = notify_pipeline(&sink, policy);
        rows.push(measure(
            case,
            n,
            |n| calling_thread_notify(&notifier, n),
            || {
                let stats = exporter.force_flush().expect("flush");
                (
                    sink.count(),
                    format!("exported {} dropped {}", stats.exported, stats.dropped()),
                )
            },
        ));
        let _ = exporter.shutdown(Duration::from_secs(30));
    }
    let sink = Nothing::default();
    let (subscription, exporter) = notify_site_pipeline(&sink);
    rows.push(measure(
        "notify_opentelemetry_callsite",
        n,
        calling_thread_notify_site,
        || {
            let stats = exporter.force_flush().expect("flush");
            (
                sink.count(),
                format!("exported {} dropped {}", stats.exported, stats.dropped()),
            )
        },
    ));
    let _ = subscription.unsubscribe();
    let _ = exporter.shutdown(Duration::from_secs(30));
    if let Some(server) = nats_server() {
        let (notifier, exporter) = nats_pipeline(&server);
        rows.push(measure(
            "notify_nats_enqueue",
            n,
            |n| calling_thread_notify(&notifier, n),
            || {
                let report = exporter.shutdown(Duration::from_secs(60));
                let stats = report.stats;
                (
                    stats.exported,
                    format!("exported {} dropped {}", stats.exported, stats.dropped.total()),
                )
            },
        ));
    }
    let sink = Nothing::default();
    let (provider, dispatch) = tracing_pipeline(&sink);
    rows.push(tracing::dispatcher::with_default(&dispatch, || {
        measure("tracing_opentelemetry", n, calling_thread_tracing, || {
            let _ = provider.force_flush();
            (sink.count(), "SDK batch processor, defaults".to_owned())
        })
    }));
    let _ = provider.shutdown();
    let before = fastrace_sink.count();
    rows.push(measure("fastrace_opentelemetry", n, calling_thread_fastrace, || {
        fastrace::flush();
        (fastrace_sink.count() - before, "default collector config".to_owned())
    }));

    println!("\nexport: {n} events per case, one event/span with 2 fields, do-nothing SpanExporter");
    println!(
        "| {:<34} | {:>17} | {:>14} | {:>9} | note |",
        "case", "calling thread ns", "process CPU ns", "delivered"
    );
    println!("|{:-<36}|{:->19}|{:->16}|{:->11}|------|", "", "", "", "");
    // For scripts/bench-report: the rows as JSON lines, to the file it names.
    if let Ok(path) = std::env::var("NOTIFY_EXPORT_TABLE_JSON") {
        let lines: String = rows
            .iter()
            .map(|row| {
                let json = serde_json::json!({
                    "case": row.case,
                    "thread_ns": row.thread_ns,
                    "process_ns": row.process_ns,
                    "delivered": row.delivered,
                    "events": n,
                });
                format!("{json}\n")
            })
            .collect();
        if let Err(e) = std::fs::write(&path, lines) {
            eprintln!("export: cannot write {path}: {e}");
        }
    }
    for row in rows {
        println!(
            "| {:<34} | {:>17.1} | {:>14.1} | {:>8.1}% | {} |",
            row.case,
            row.thread_ns,
            row.process_ns,
            100.0 * row.delivered as f64 / n as f64,
            row.note
        );
    }
}

/// `NOTIFY_EXPORT_CALLGRIND=CASE`: only that case's calling-thread loop, 100,000 events.
fn callgrind(case: &str) {
    const N: u64 = 100_000;
    let sink = Nothing::default();
    match case {
        "nobody_notify" => calling_thread_notify(&Notifier::new(), N),
        "owned_noop" => calling_thread_notify(&owned_noop_notifier(), N),
        "event_noop" => calling_thread_notify(&event_noop_notifier(), N),
        "notify" => {
            let (notifier, exporter) = notify_pipeline(&sink, WAIT);
            calling_thread_notify(&notifier, N);
            let _ = exporter.shutdown(Duration::from_secs(600));
        }
        "notify_callsite" => {
            let (_subscription, exporter) = notify_site_pipeline(&sink);
            calling_thread_notify_site(N);
            let _ = exporter.shutdown(Duration::from_secs(600));
        }
        "tracing" => {
            let (provider, dispatch) = tracing_pipeline(&sink);
            tracing::dispatcher::with_default(&dispatch, || calling_thread_tracing(N));
            let _ = provider.shutdown();
        }
        "nats" => {
            let server = nats_server().expect("nats-server");
            let (notifier, exporter) = nats_pipeline(&server);
            calling_thread_notify(&notifier, N);
            let report = exporter.shutdown(Duration::from_secs(600));
            println!("nats: {:?}", report.stats);
        }
        "fastrace" => {
            fastrace_pipeline(&sink);
            calling_thread_fastrace(N);
            fastrace::flush();
        }
        other => panic!(
            "NOTIFY_EXPORT_CALLGRIND: no case {other:?} (nobody_notify, event_noop, owned_noop, notify, notify_callsite, nats, tracing, fastrace)"
        ),
    }
    println!("{case}: {N} events; delivered {}", sink.count());
}

fn main() {
    if let Ok(case) = std::env::var("NOTIFY_EXPORT_CALLGRIND") {
        callgrind(&case);
        return;
    }
    let fastrace_sink = Nothing::default();
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &fastrace_sink);
    criterion.final_summary();
    // `cargo test --benches` runs this binary in test mode: skip the table there.
    if std::env::args().any(|a| a == "--bench") {
        let n = std::env::var("NOTIFY_EXPORT_EVENTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        // `NOTIFY_EXPORT_EVENTS=0`: criterion only. For the table alone, in a process of its own
        // (no exporter or collector thread of criterion's cases still busy: fastrace's collector
        // works through criterion's millions of spans for a long while), pass a filter that names
        // no case: `cargo bench --bench export -- table_only`.
        if n > 0 {
            table(n, &fastrace_sink);
        }
    }
}
