//! `#[instrument_event]` on async fns: the event covers first poll to completion, a dropped future
//! is cancelled, interleaved futures never nest, and the shapes of shared/cases M2-M4, M6, M9.

use std::fmt::Display;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use notify_core::testing::capture_notifications;
use notify_core::{
    event::{EventId, Outcome},
    instrument_event, Event, Notifier, Pattern, Value,
};

fn capture<T>(pattern: &str, f: impl FnOnce() -> T) -> (T, Vec<Event>) {
    capture_notifications(Notifier::global(), pattern, f)
}

fn capture_glob<T>(glob: &str, f: impl FnOnce() -> T) -> (T, Vec<Event>) {
    capture_notifications(Notifier::global(), Pattern::glob(glob).unwrap(), f)
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// Polls once with a waker that does nothing.
fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// Pending once, then ready.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yield_now() -> YieldNow {
    YieldNow(false)
}

/// Ready once `flag` is set.
struct WaitFor(Arc<AtomicBool>);

impl Future for WaitFor {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[derive(Debug)]
struct Boom;

impl Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}

// ---------------------------------------------------------------------------------------------
// The event's extent
// ---------------------------------------------------------------------------------------------

#[instrument_event("async.extent", fields(id), ret)]
async fn two_polls(id: u32) -> u32 {
    yield_now().await;
    id + 1
}

#[test]
fn an_async_event_covers_first_poll_to_completion() {
    let ((), events) = capture("async.extent", || {
        let future = two_polls(1);
        drop(future);
    });
    assert!(events.is_empty(), "a future never polled publishes nothing: {events:?}");

    let (value, events) = capture("async.extent", || {
        let mut future = pin!(two_polls(2));
        let created = std::time::Instant::now();
        assert!(poll_once(future.as_mut()).is_pending());
        assert_eq!(
            notify_core::context::current_event_id(),
            None,
            "not current between polls"
        );
        let first_poll_done = std::time::Instant::now();
        let Poll::Ready(value) = poll_once(future.as_mut()) else {
            panic!("ready on the second poll")
        };
        (value, created, first_poll_done)
    });
    let (value, created, first_poll_done) = value;
    assert_eq!(value, 3);
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.outcome(), Outcome::Completed);
    assert!(
        event.start() >= created && event.start() <= first_poll_done,
        "started on the first poll"
    );
    assert!(event.end() >= first_poll_done, "finished on completion");
    assert_eq!(event.payload().get("id"), Some(&Value::U64(2)));
    assert_eq!(event.payload().get("return").and_then(Value::as_str), Some("3"));
}

#[instrument_event("async.cancel", ret)]
async fn cancelled(id: u32) -> u32 {
    yield_now().await;
    id
}

#[test]
fn an_async_future_dropped_before_completion_is_cancelled() {
    let ((), events) = capture("async.cancel", || {
        let mut future = Box::pin(cancelled(5));
        assert!(poll_once(future.as_mut()).is_pending());
        drop(future);
    });
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome(), Outcome::Cancelled);
    assert!(events[0].payload().get("return").is_none());
}

#[instrument_event("async.panics")]
async fn panics_on_second_poll() {
    yield_now().await;
    panic!("async boom");
}

#[test]
fn an_async_panic_finishes_the_event_as_panicked_and_goes_on() {
    let (caught, events) = capture("async.panics", || {
        std::panic::catch_unwind(|| block_on(panics_on_second_poll())).expect_err("the panic goes on")
    });
    assert_eq!(caught.downcast_ref::<&str>(), Some(&"async boom"));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome(), Outcome::Panicked);
}

#[instrument_event("async.result", err)]
async fn fallible(fail: bool) -> Result<u8, Boom> {
    yield_now().await;
    if fail {
        Err(Boom)?;
    }
    Ok(1)
}

#[test]
fn async_err_records_the_error() {
    let (result, events) = capture("async.result", || block_on(fallible(true)));
    assert!(result.is_err());
    assert!(matches!(
        events[0].payload().get("exception"),
        Some(Value::Exception { message, .. }) if message == "boom"
    ));
    let (result, events) = capture("async.result", || block_on(fallible(false)));
    assert_eq!((result.unwrap(), events.len()), (1, 1));
    assert!(events[0].payload().get("exception").is_none());
}

static LAZY: AtomicU32 = AtomicU32::new(0);

fn counted(x: u32) -> u32 {
    LAZY.fetch_add(1, Ordering::Relaxed);
    x
}

#[instrument_event("async.lazy", fields(x = counted(x)))]
async fn lazy(x: u32) -> u32 {
    x
}

#[test]
fn m8_an_unlistened_async_fn_evaluates_no_field() {
    assert_eq!(block_on(lazy(1)), 1);
    assert_eq!(LAZY.load(Ordering::Relaxed), 0);
    let (_, events) = capture("async.lazy", || block_on(lazy(2)));
    assert_eq!(LAZY.load(Ordering::Relaxed), 1);
    assert_eq!(events[0].payload().get("x"), Some(&Value::U64(2)));
}

// ---------------------------------------------------------------------------------------------
// Parents, M9
// ---------------------------------------------------------------------------------------------

#[instrument_event("m9.child")]
fn child() {}

#[instrument_event("m9.task", fields(task))]
async fn task(task: &'static str, mine: Arc<AtomicBool>, other: Arc<AtomicBool>) -> Option<EventId> {
    mine.store(true, Ordering::Release);
    // Both tasks are in flight from here on: their polls interleave.
    WaitFor(other).await;
    let current = notify_core::context::current_event_id();
    child();
    yield_now().await;
    assert_eq!(
        notify_core::context::current_event_id(),
        current,
        "the same event in every poll"
    );
    child();
    current
}

#[test]
fn m9_interleaved_async_events_never_nest() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let (parents, events) = capture_glob("m9.*", || {
        let a = Arc::new(AtomicBool::new(false));
        let b = Arc::new(AtomicBool::new(false));
        let ta = runtime.spawn(task("a", a.clone(), b.clone()));
        let tb = runtime.spawn(task("b", b, a));
        runtime.block_on(async { (ta.await.unwrap(), tb.await.unwrap()) })
    });
    let tasks: Vec<&Event> = events.iter().filter(|e| e.name() == "m9.task").collect();
    let children: Vec<&Event> = events.iter().filter(|e| e.name() == "m9.child").collect();
    assert_eq!((tasks.len(), children.len()), (2, 4), "{events:?}");
    let id_of = |name: &str| {
        tasks
            .iter()
            .find(|e| e.payload().get("task").and_then(Value::as_str) == Some(name))
            .unwrap()
            .id()
    };
    let (a, b) = (id_of("a"), id_of("b"));
    assert_eq!(parents, (Some(a), Some(b)), "each task is current during its own polls");
    for task in &tasks {
        assert_eq!(task.parent_id(), None, "a task never nests under its sibling");
    }
    for child in &children {
        assert!(child.parent_id() == Some(a) || child.parent_id() == Some(b));
    }
    assert_eq!(children.iter().filter(|c| c.parent_id() == Some(a)).count(), 2);
    assert_ne!(tasks[0].start(), tasks[1].start(), "each carries its own start");
}

#[instrument_event("nest_async.outer")]
async fn outer_async() -> Option<EventId> {
    yield_now().await;
    inner_async().await
}

#[instrument_event("nest_async.inner")]
async fn inner_async() -> Option<EventId> {
    yield_now().await;
    notify_core::context::current_event_id()
}

#[test]
fn an_awaited_instrumented_async_fn_nests_under_the_awaiting_one() {
    let (current, events) = capture_glob("nest_async.*", || block_on(outer_async()));
    let [inner, outer] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(current, Some(inner.id()));
    assert_eq!(inner.name(), "nest_async.inner");
    assert_eq!(inner.parent_id(), Some(outer.id()));
    assert_eq!(outer.parent_id(), None);
}

// ---------------------------------------------------------------------------------------------
// Shapes: M2, M3, M4, M6, traits
// ---------------------------------------------------------------------------------------------

#[instrument_event("m2.async_impl", err)]
async fn async_displayable(n: u8) -> Result<impl Display, Boom> {
    yield_now().await;
    if n == 0 {
        return Err(Boom);
    }
    Ok(n * 2)
}

#[test]
fn m2_async_fn_returning_result_of_impl_trait() {
    let (text, events) = capture("m2.async_impl", || {
        block_on(async_displayable(4)).map(|d| d.to_string())
    });
    assert_eq!((text.unwrap().as_str(), events.len()), ("8", 1));
    let (_, events) = capture("m2.async_impl", || block_on(async_displayable(0)).is_err());
    assert!(events[0].payload().get("exception").is_some());
}

#[instrument_event("m3.async_closure")]
async fn make_adder(base: u8) -> impl Fn() -> u8 {
    yield_now().await;
    move || base + 1
}

#[test]
fn m3_async_fn_returning_a_closure() {
    let (adder, events) = capture("m3.async_closure", || block_on(make_adder(1)));
    assert_eq!((adder(), events.len()), (2, 1));
}

async fn m4_plain(mut s: &str, n: usize) -> String {
    let local = "x".repeat(n);
    yield_now().await;
    assert_eq!(s, "arg");
    s = &local;
    s.to_owned()
}

#[instrument_event("m4.rebind")]
async fn m4_instrumented(mut s: &str, n: usize) -> String {
    let local = "x".repeat(n);
    yield_now().await;
    assert_eq!(s, "arg");
    s = &local;
    s.to_owned()
}

#[test]
fn m4_reassigning_a_mut_reference_parameter_behaves_as_without_the_attribute() {
    let plain = block_on(m4_plain("arg", 3));
    let (instrumented, events) = capture("m4.rebind", || block_on(m4_instrumented("arg", 3)));
    assert_eq!(plain, "xxx");
    assert_eq!(instrumented, plain);
    assert_eq!(events.len(), 1);
}

#[instrument_event("async.reborrow")]
async fn first_mut(buf: &mut [u8]) -> &mut u8 {
    yield_now().await;
    &mut buf[0]
}

#[test]
fn an_async_fn_can_return_a_reborrow_of_its_argument() {
    let mut buf = [1, 2];
    let ((), events) = capture("async.reborrow", || *block_on(first_mut(&mut buf)) += 10);
    assert_eq!((buf, events.len()), ([11, 2], 1));
}

struct Counter {
    id: u64,
    hits: u32,
}

impl Counter {
    #[instrument_event("m6.async_ref", fields(id = self.id, hits = self.hits))]
    async fn peek(&self) -> u32 {
        yield_now().await;
        self.hits
    }

    #[instrument_event("m6.async_mut", fields(id = self.id), ret)]
    async fn hit(&mut self) -> u32 {
        yield_now().await;
        self.hits += 1;
        self.hits
    }

    #[instrument_event("m6.async_value", fields(id = self.id))]
    async fn into_hits(self) -> u32 {
        yield_now().await;
        self.hits
    }
}

trait Repo {
    async fn find(&self, key: u64) -> Option<u64>;

    #[instrument_event("m6.async_trait_default", fields(key))]
    async fn exists(&self, key: u64) -> bool {
        self.find(key).await.is_some()
    }
}

impl Repo for Counter {
    #[instrument_event("m6.async_trait_impl", fields(id = self.id, key))]
    async fn find(&self, key: u64) -> Option<u64> {
        yield_now().await;
        (key == self.id).then_some(key)
    }
}

#[test]
fn m6_self_in_fields_of_async_methods_and_async_trait_fns() {
    let mut counter = Counter { id: 4, hits: 0 };
    let (hits, events) = capture("m6.async_mut", || block_on(counter.hit()));
    assert_eq!((hits, events[0].payload().get("id")), (1, Some(&Value::U64(4))));
    assert_eq!(events[0].payload().get("return").and_then(Value::as_str), Some("1"));
    let (hits, events) = capture("m6.async_ref", || block_on(counter.peek()));
    assert_eq!((hits, events[0].payload().get("hits")), (1, Some(&Value::U64(1))));
    let (found, events) = capture_glob("m6.async_trait_*", || block_on(counter.exists(4)));
    assert!(found);
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(names, ["m6.async_trait_impl", "m6.async_trait_default"]);
    assert_eq!(events[0].parent_id(), Some(events[1].id()));
    assert_eq!(events[0].payload().get("key"), Some(&Value::U64(4)));
    let (hits, events) = capture("m6.async_value", || block_on(counter.into_hits()));
    assert_eq!((hits, events.len()), (1, 1));
}

// ---------------------------------------------------------------------------------------------
// Send, size
// ---------------------------------------------------------------------------------------------

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[instrument_event("async.send", fields(id))]
async fn sendable(id: u32) -> u32 {
    yield_now().await;
    id + 1
}

#[test]
fn an_instrumented_future_is_send_when_its_body_is() {
    let ((), events) = capture("async.send", || {
        let future = assert_send(sendable(1));
        assert_eq!(block_on(future), 2);
    });
    assert_eq!(events.len(), 1);
}

async fn sized_plain(a: u64, b: [u8; 32]) -> u64 {
    yield_now().await;
    a + u64::from(b[0])
}

#[instrument_event("async.size")]
async fn sized_instrumented(a: u64, b: [u8; 32]) -> u64 {
    yield_now().await;
    a + u64::from(b[0])
}

async fn no_args_plain() -> u64 {
    yield_now().await;
    1
}

#[instrument_event("async.size_no_args")]
async fn no_args_instrumented() -> u64 {
    yield_now().await;
    1
}

/// The documented growth: the boxed handle's pointer and a word of state and alignment, plus the
/// `mut` and `&mut` arguments, which the body's future rebinds (shared/cases M8).
const GROWTH: usize = 3 * size_of::<usize>();

#[test]
fn m8_the_future_grows_by_three_words_plus_its_rebound_arguments() {
    let plain = size_of_val(&sized_plain(1, [0; 32]));
    let instrumented = size_of_val(&sized_instrumented(1, [0; 32]));
    assert!(
        instrumented <= plain + GROWTH,
        "plain {plain} B, instrumented {instrumented} B"
    );
    let plain = size_of_val(&no_args_plain());
    let instrumented = size_of_val(&no_args_instrumented());
    assert!(
        instrumented <= plain + GROWTH,
        "plain {plain} B, instrumented {instrumented} B"
    );
    let plain = size_of_val(&m4_plain("a", 1));
    let instrumented = size_of_val(&m4_instrumented("a", 1));
    let rebound = size_of::<&str>();
    assert!(
        instrumented <= plain + GROWTH + rebound,
        "plain {plain} B, instrumented {instrumented} B"
    );
    assert_eq!(
        block_on(sized_instrumented(1, [2; 32])),
        block_on(sized_plain(1, [2; 32]))
    );
    assert_eq!(block_on(no_args_instrumented()), block_on(no_args_plain()));
}

#[instrument_event("unwind.flush")]
async fn flush_during_unwind() -> u8 {
    YieldNow(false).await;
    1
}

#[instrument_event("unwind.rollback", err)]
fn rollback_during_unwind() -> Result<(), String> {
    Ok(())
}

/// Runs instrumented code from a `Drop` while an unrelated panic unwinds (a rollback in a failed
/// request): its events end normally, not as panicked.
struct CleanUp;

impl Drop for CleanUp {
    fn drop(&mut self) {
        let _ = rollback_during_unwind();
        assert_eq!(block_on(flush_during_unwind()), 1);
    }
}

#[test]
fn events_run_during_an_unrelated_unwinding_complete_normally() {
    let (result, events) = capture_glob("unwind.*", || {
        std::panic::catch_unwind(|| {
            let _cleanup = CleanUp;
            panic!("request failed");
        })
    });
    assert!(result.is_err());
    let outcomes: Vec<(&str, Outcome)> = events.iter().map(|e| (e.name(), e.outcome())).collect();
    assert_eq!(
        outcomes,
        [
            ("unwind.rollback", Outcome::Completed),
            ("unwind.flush", Outcome::Completed)
        ]
    );
}

#[instrument_event("async.facts_then_return", fields(id), ret)]
async fn records_then_returns(id: u32) -> u32 {
    notify_core::record("before", 1_u64);
    yield_now().await;
    notify_core::record("after", 2_u64);
    id
}

/// Facts recorded in each poll reach the event, in record order, before what `ret` records (the
/// facts travel in the handle between polls since a handle is current only while polled).
#[test]
fn facts_of_every_poll_come_before_the_return_value_in_the_payload() {
    let (value, events) = capture("async.facts_then_return", || block_on(records_then_returns(5)));
    assert_eq!(value, 5);
    let keys: Vec<&str> = events[0].payload().iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["id", "before", "after", "return"]);
}
