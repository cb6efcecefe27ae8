//! notify-web's costs: what the recorder costs the instrumenting thread (compared, in the same
//! run, with a no-op async subscriber on the same pool) and what rendering costs.
//!
//! `cargo bench -p notify-web --bench web -- --warm-up-time 1 --measurement-time 2`

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_pool::{AsyncOptions, WorkerPool};
use notify_web::{render_index, render_trace, trace_json, TraceRecorder, WebOptions};

/// Events published between two (untimed) flushes: below the mailbox capacity, so nothing is
/// dropped and every measured event is a real enqueue.
const CHUNK: u64 = 1_000;

fn publish_timed(notifier: &Notifier, pool: &WorkerPool, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        let start = Instant::now();
        for i in 0..n {
            notifier.instrument(
                "query.sql",
                || Payload::new().with("sql", "SELECT 1").with("i", i),
                |_| (),
            );
        }
        total += start.elapsed();
        pool.flush();
        left -= n;
    }
    total
}

fn instrumenting_thread(c: &mut Criterion) {
    let pool = WorkerPool::builder().threads(1).build();
    let options = || AsyncOptions::new().capacity(2 * CHUNK as usize);
    let mut group = c.benchmark_group("instrumenting_thread");

    let notifier = Notifier::new();
    let subscription = pool.subscribe(&notifier, Pattern::all(), options(), |e: &Event| {
        black_box(e);
    });
    group.bench_function("noop_async_subscriber", |b| {
        b.iter_custom(|iters| publish_timed(&notifier, &pool, iters))
    });
    assert_eq!(subscription.dropped(), 0);

    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let subscription = recorder.subscribe_with(&pool, &notifier, Pattern::all(), options());
    group.bench_function("trace_recorder", |b| {
        b.iter_custom(|iters| publish_timed(&notifier, &pool, iters))
    });
    assert_eq!(subscription.dropped(), 0);
    group.finish();
}

/// A trace of `events` events: a root with `events - 1` SQL children, recorded synchronously.
fn big_trace(events: usize) -> TraceRecorder {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let r = recorder.clone();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::event(move |e: &Event| r.record(e)));
    notifier.instrument(
        "request.app",
        || Payload::new().with("path", "/books"),
        |_| {
            for i in 0..events - 1 {
                notifier.instrument(
                    "query.sql",
                    || {
                        Payload::new()
                            .with("sql", "SELECT title FROM books WHERE author = ?1")
                            .with("i", i)
                    },
                    |_| (),
                );
            }
        },
    );
    recorder
}

fn render(c: &mut Criterion) {
    let recorder = big_trace(1_000);
    let trace = recorder.traces()[0].clone();
    assert_eq!(trace.events().len(), 1_000);
    let mut group = c.benchmark_group("render");
    group.bench_function("trace_view_1000_events", |b| {
        b.iter(|| black_box(render_trace(&trace, None)))
    });
    group.bench_function("trace_json_1000_events", |b| b.iter(|| black_box(trace_json(&trace))));
    group.bench_function("index_1_trace_of_1000_events", |b| {
        b.iter(|| black_box(render_index(&recorder)))
    });
    group.finish();
}

criterion_group!(benches, instrumenting_thread, render);
criterion_main!(benches);
