//! Issue 11, fault 2: `#[instrument_event]` on the methods of `#[async_trait]` impls and traits,
//! and on functions that return `async move { .. }` or `Box::pin(async move { .. })`. The event
//! covers the future's run (first poll to completion), not the call that boxes it (on main it
//! lasted about 0.8 us while the body slept 50 ms), and events inside nest under it.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use notify_core::testing::capture_notifications;
use notify_core::{event::Outcome, instrument_event, Event, Notifier, Pattern, Value};

fn capture_glob<T>(glob: &str, f: impl FnOnce() -> T) -> (T, Vec<Event>) {
    capture_notifications(Notifier::global(), Pattern::glob(glob).unwrap(), f)
}

fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
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

#[instrument_event("inner.async_trait")]
fn inner() {}

/// The time between the two polls of each test's future: the event must span it.
const BETWEEN_POLLS: Duration = Duration::from_millis(20);

/// Polls `future` twice, `BETWEEN_POLLS` apart; it must be ready on the second poll.
fn run_in_two_polls<T>(future: Pin<&mut (dyn Future<Output = T> + Send + '_)>) -> T {
    let mut future = future;
    assert!(poll_once(future.as_mut()).is_pending(), "pending on the first poll");
    assert_eq!(
        notify_core::context::current_event_id(),
        None,
        "not current between polls"
    );
    std::thread::sleep(BETWEEN_POLLS);
    match poll_once(future.as_mut()) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("ready on the second poll"),
    }
}

/// The outer event (one per test: tests run in parallel on the global notifier, each with its own
/// outer event name) lasts at least `BETWEEN_POLLS` and is the parent of the `inner` event run
/// after the await.
fn assert_covers_the_run(events: &[Event], outer: &str) {
    let outers: Vec<_> = events.iter().filter(|e| e.name() == outer).collect();
    assert_eq!(outers.len(), 1, "one event of {outer}: {events:?}");
    let outer = outers[0];
    assert!(
        outer.duration() >= BETWEEN_POLLS,
        "the event covers the future's run, not its creation: {:?}",
        outer.duration()
    );
    assert!(
        events
            .iter()
            .any(|e| e.name() == "inner.async_trait" && e.parent_id() == Some(outer.id())),
        "the event inside nests under it: {events:?}"
    );
    assert_eq!(outer.outcome(), Outcome::Completed);
}

#[async_trait]
trait Store {
    async fn get(&self, key: &str) -> usize;
    async fn put(&mut self, key: String) -> Result<usize, std::fmt::Error>;
    async fn ping(&self) -> u8;
    async fn peek(&self) -> u8;

    /// A default method, instrumented in the trait.
    #[instrument_event("default.async_trait", ret)]
    async fn describe(&self) -> String {
        YieldNow(false).await;
        inner();
        "store".to_owned()
    }
}

struct Db {
    id: u64,
    keys: Vec<String>,
}

#[async_trait]
impl Store for Db {
    #[instrument_event("get.async_trait", fields(key, db = self.id), ret)]
    async fn get(&self, key: &str) -> usize {
        YieldNow(false).await;
        inner();
        key.len() + self.keys.len()
    }

    // The attribute after another attribute of the method, with `err`.
    #[inline]
    #[instrument_event("put.async_trait", fields(key = key.as_str()), err)]
    async fn put(&mut self, key: String) -> Result<usize, std::fmt::Error> {
        YieldNow(false).await;
        inner();
        if key.is_empty() {
            return Err(std::fmt::Error);
        }
        self.keys.push(key);
        Ok(self.keys.len())
    }

    // The attribute before another attribute of the method.
    #[instrument_event("ping.async_trait")]
    #[inline]
    async fn ping(&self) -> u8 {
        YieldNow(false).await;
        inner();
        1
    }

    #[instrument_event("peek.async_trait")]
    async fn peek(&self) -> u8 {
        YieldNow(false).await;
        2
    }
}

#[test]
fn async_trait_method_event_covers_the_future_run_and_parents_inner_events() {
    let db = Db {
        id: 9,
        keys: vec!["a".to_owned()],
    };
    let (value, events) = capture_glob("*.async_trait", || run_in_two_polls(db.get("book").as_mut()));
    assert_eq!(value, 5);
    assert_covers_the_run(&events, "get.async_trait");
    let get = events.iter().find(|e| e.name() == "get.async_trait").unwrap();
    assert_eq!(get.payload().get("key").and_then(Value::as_str), Some("book"));
    assert_eq!(get.payload().get("db"), Some(&Value::U64(9)));
    assert_eq!(get.payload().get("return").and_then(Value::as_str), Some("5"));
}

#[test]
fn async_trait_method_with_err_in_either_attribute_order() {
    let mut db = Db {
        id: 1,
        keys: Vec::new(),
    };
    let (value, events) = capture_glob("*.async_trait", || run_in_two_polls(db.put(String::new()).as_mut()));
    assert_eq!(value, Err(std::fmt::Error));
    assert_covers_the_run(&events, "put.async_trait");
    let put = events.iter().find(|e| e.name() == "put.async_trait").unwrap();
    assert!(
        matches!(put.payload().get("exception"), Some(Value::Exception { .. })),
        "{put:?}"
    );

    let (value, events) = capture_glob("*.async_trait", || run_in_two_polls(db.ping().as_mut()));
    assert_eq!(value, 1);
    assert_covers_the_run(&events, "ping.async_trait");
}

#[test]
fn async_trait_default_method_is_instrumented() {
    let db = Db {
        id: 1,
        keys: Vec::new(),
    };
    let (value, events) = capture_glob("*.async_trait", || run_in_two_polls(db.describe().as_mut()));
    assert_eq!(value, "store");
    assert_covers_the_run(&events, "default.async_trait");
}

#[test]
fn async_trait_future_starts_on_first_poll_and_a_dropped_one_is_cancelled() {
    let db = Db {
        id: 1,
        keys: Vec::new(),
    };
    let ((), events) = capture_glob("peek.*", || drop(db.peek()));
    assert!(events.is_empty(), "a future never polled publishes nothing: {events:?}");
    let ((), events) = capture_glob("peek.*", || {
        let mut future = db.peek();
        assert!(poll_once(future.as_mut()).is_pending());
        drop(future);
    });
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome(), Outcome::Cancelled);
}

// `#[async_trait(?Send)]`: the boxed future is not `Send`.

#[async_trait(?Send)]
trait Local {
    async fn local(&self) -> u8;
}

#[async_trait(?Send)]
impl Local for Db {
    #[instrument_event("local.async_trait", ret)]
    async fn local(&self) -> u8 {
        let not_send = std::rc::Rc::new(2);
        YieldNow(false).await;
        inner();
        *not_send
    }
}

#[test]
fn async_trait_not_send_method_is_instrumented() {
    let db = Db {
        id: 1,
        keys: Vec::new(),
    };
    let (value, events) = capture_glob("*.async_trait", || {
        let mut future = db.local();
        assert!(poll_once(future.as_mut()).is_pending());
        std::thread::sleep(BETWEEN_POLLS);
        poll_once(future.as_mut())
    });
    assert_eq!(value, Poll::Ready(2));
    assert_covers_the_run(&events, "local.async_trait");
}

// Hand-written functions that return an async block.

#[instrument_event("block.async_trait", fields(n), ret)]
fn returns_async_block(n: u8) -> impl Future<Output = u8> + Send {
    let doubled = n * 2;
    async move {
        YieldNow(false).await;
        inner();
        doubled
    }
}

#[instrument_event("boxed.async_trait", ret)]
fn returns_boxed_async_block(n: u8) -> Pin<Box<dyn Future<Output = u8> + Send>> {
    Box::pin(async move {
        YieldNow(false).await;
        inner();
        n + 1
    })
}

#[test]
fn functions_returning_an_async_block_are_instrumented_like_async_fns() {
    let (value, events) = capture_glob("*.async_trait", || {
        let created = Instant::now();
        let value = run_in_two_polls(pin!(returns_async_block(4)));
        (value, created)
    });
    let (value, created) = value;
    assert_eq!(value, 8);
    assert_covers_the_run(&events, "block.async_trait");
    let block = events.iter().find(|e| e.name() == "block.async_trait").unwrap();
    assert!(block.start() >= created);
    assert_eq!(block.payload().get("n"), Some(&Value::U64(4)));
    assert_eq!(block.payload().get("return").and_then(Value::as_str), Some("8"));

    let (value, events) = capture_glob("*.async_trait", || {
        run_in_two_polls(returns_boxed_async_block(1).as_mut())
    });
    assert_eq!(value, 2);
    assert_covers_the_run(&events, "boxed.async_trait");
}
