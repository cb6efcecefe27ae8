//! The collector on its own: flush requests that time out leave nothing behind (issue 46 item 3),
//! asynchronous sinks on the collector's own runtime and on the application's, and the sink's
//! errors counted and reported with the exporter's name.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Payload};
use notify_export::{Collector, DropReport, ExportError, Sink, SinkError, SinkFuture};

/// Counts the bytes live on the heap, to see what 200,000 timed-out flushes leave behind.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests of this file run one at a time: the heap count is process-wide.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn event(name: &'static str) -> Arc<Event> {
    let now = Instant::now();
    Arc::new(Event::new(name, now, now, Payload::new()))
}

/// A sink whose export waits (on the collector's tokio runtime) until released.
struct Gate {
    open: Arc<tokio::sync::Notify>,
    started: Arc<AtomicBool>,
    exported: Arc<AtomicUsize>,
}

impl Sink for Gate {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        Box::pin(async move {
            self.started.store(true, Ordering::SeqCst);
            self.open.notified().await;
            self.exported.fetch_add(batch.len(), Ordering::SeqCst);
            Ok(())
        })
    }
}

#[test]
fn i46_3_timed_out_flushes_during_a_hung_export_leave_nothing_behind() {
    let _serial = serial();
    let open = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(AtomicBool::new(false));
    let exported = Arc::new(AtomicUsize::new(0));
    let collector = Collector::builder(
        "gate",
        Gate {
            open: open.clone(),
            started: started.clone(),
            exported: exported.clone(),
        },
    )
    .scheduled_delay(Duration::from_millis(1))
    .build();
    collector.push(&event("hung.export"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the export never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Warm up what a flush call allocates on first use (the error's stats, the handoff's snapshot).
    let _ = collector.force_flush(Duration::ZERO);
    let before = LIVE.load(Ordering::SeqCst);
    for _ in 0..200_000 {
        match collector.force_flush(Duration::ZERO) {
            Err(ExportError::TimedOut(stats)) => assert_eq!(stats.exported, 0),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
    let grown = LIVE.load(Ordering::SeqCst) - before;
    // The old request queue kept about 800 bytes per timed-out request (+167 MB for 200,000).
    assert!(grown < 64 * 1024, "200,000 timed-out flushes left {grown} bytes behind");
    open.notify_one();
    let stats = collector.force_flush(Duration::from_secs(10)).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (1, 0));
    assert_eq!(exported.load(Ordering::SeqCst), 1);
    // The collector's thread serves all those tickets with one flush: it is idle again.
    collector.push(&event("after.flush"));
    open.notify_one();
    assert_eq!(collector.force_flush(Duration::from_secs(10)).unwrap().exported, 2);
}

/// An asynchronous sink that awaits a tokio timer: it needs a runtime with its time driver.
struct Sleepy(Arc<AtomicUsize>);

impl Sink for Sleepy {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            self.0.fetch_add(batch.len(), Ordering::SeqCst);
            Ok(())
        })
    }
}

#[test]
fn in_a_plain_thread_an_async_sink_runs_on_the_collectors_own_runtime() {
    let _serial = serial();
    let count = Arc::new(AtomicUsize::new(0));
    let collector = Collector::builder("sleepy", Sleepy(count.clone()))
        .max_batch_size(3)
        .build();
    assert!(format!("{collector:?}").contains("own runtime"), "{collector:?}");
    for _ in 0..10 {
        collector.push(&event("job.run"));
    }
    let stats = collector.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (10, 0), "{stats}");
    assert_eq!(count.load(Ordering::SeqCst), 10);
}

#[test]
fn in_a_tokio_service_an_async_sink_runs_on_the_applications_runtime() {
    let _serial = serial();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let count = Arc::new(AtomicUsize::new(0));
        // Built inside the service's runtime: the collector finds it.
        let collector = Collector::builder("sleepy", Sleepy(count.clone())).build();
        assert!(
            format!("{collector:?}").contains("application's runtime"),
            "{collector:?}"
        );
        for _ in 0..10 {
            collector.push(&event("job.run"));
        }
        let closing = collector.clone();
        let stats = tokio::task::spawn_blocking(move || closing.shutdown(Duration::from_secs(10)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((stats.exported, stats.dropped()), (10, 0), "{stats}");
        assert_eq!(count.load(Ordering::SeqCst), 10);
    });
}

/// Refuses every other batch, panics on the third.
struct Moody(usize);

impl Sink for Moody {
    fn export<'a>(&'a mut self, _batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.0 += 1;
        match self.0 {
            3 => panic!("moody exploded"),
            n if n % 2 == 0 => notify_export::ready(Err(SinkError::new("refused\nby the far end"))),
            _ => notify_export::ready(Ok(())),
        }
    }
}

#[test]
fn refused_and_panicking_batches_are_counted_and_reported_with_the_exporters_name() {
    let _serial = serial();
    let reports = Arc::new(Mutex::new(Vec::<DropReport>::new()));
    let sink = reports.clone();
    let collector = Collector::builder("moody", Moody(0))
        .max_batch_size(2)
        .on_drops(move |r: &DropReport| sink.lock().unwrap().push(r.clone()))
        .build();
    for _ in 0..8 {
        collector.push(&event("job.run"));
    }
    let stats = collector.force_flush(Duration::from_secs(10)).unwrap();
    // Batches 1..=4 of 2: 1 ok, 2 refused, 3 panicked, 4 refused.
    assert_eq!((stats.exported, stats.dropped_exporter_error), (2, 6), "{stats}");
    let reports = reports.lock().unwrap();
    let last = reports.last().expect("a report");
    assert_eq!(last.exporter, "moody");
    assert_eq!(last.total.dropped_exporter_error, 6);
    assert_eq!(last.last_error.as_deref(), Some("refused\nby the far end"));
    assert!(last.to_string().starts_with("exporter `moody` dropped"), "{last}");
    assert!(!last.to_string().contains('\n'), "foreign text is escaped: {last}");
}
