//! notify-web's costs: what the recorder costs the instrumenting thread (compared, in the same
//! run, with a sink that does nothing behind a collector configured the same: the hand-off's
//! floor) and what rendering costs.
//!
//! `cargo bench -p notify-web --bench web -- --warm-up-time 1 --measurement-time 2`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
use notify_export::{ready, Collector, CollectorBuilder, ExportStats, Sink, SinkFuture};
use notify_web::{render_index, render_trace, trace_json, TraceRecorder, WebOptions};

/// Events published between two (untimed) flushes: below the queue capacity, so nothing is
/// dropped and every measured event is a real hand-off.
const CHUNK: u64 = 1_000;

/// The collector settings both measurements share.
fn configure<S: Sink>(builder: CollectorBuilder<S>) -> CollectorBuilder<S> {
    builder.queue_capacity(2 * CHUNK as usize)
}

fn publish_timed(notifier: &Notifier, flush: &dyn Fn() -> ExportStats, iters: u64) -> Duration {
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
        flush();
        left -= n;
    }
    total
}

/// A sink that takes every batch and does nothing with it.
struct Noop;

impl Sink for Noop {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        black_box(batch);
        ready(Ok(()))
    }
}

/// Hands sampled events to the collector: what the recorder's subscription does.
struct Push(Collector);

impl OwnedEventSubscriber for Push {
    fn deliver(&self, event: &Arc<Event>) {
        if event.is_sampled() {
            self.0.push(event);
        }
    }
}

fn instrumenting_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("instrumenting_thread");

    let notifier = Notifier::new();
    let collector = configure(Collector::builder("noop", Noop)).build();
    let _subscription = notifier.subscribe(Pattern::all(), Subscriber::owned(Push(collector.clone())));
    let flush = || collector.force_flush(Duration::from_secs(30)).unwrap();
    group.bench_function("noop_sink", |b| {
        b.iter_custom(|iters| publish_timed(&notifier, &flush, iters))
    });
    assert_eq!(collector.stats().dropped(), 0);

    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let live = recorder.subscribe_with(&notifier, Pattern::all(), configure);
    let flush = || live.force_flush(Duration::from_secs(30)).unwrap();
    group.bench_function("trace_recorder", |b| {
        b.iter_custom(|iters| publish_timed(&notifier, &flush, iters))
    });
    assert_eq!(live.collector().stats().dropped(), 0);
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
