//! [`WorkerPool`]: subscribing async subscribers, flush, shutdown and the pool's counters.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use notify_core::{Notifier, Pattern, Subscriber};

use crate::config::Config;
use crate::group::{Fanout, Group};
use crate::mailbox::{Home, Mailbox};
use crate::shutdown::Owner;
use crate::worker::{self, PoolInner};
use crate::{
    AsyncFailure, AsyncHandle, AsyncOptions, AsyncSubscriber, AsyncSubscription, FanoutSubscription, FlushGuard,
    PoolBuilder, ShutdownReport, SlowSubscriber,
};

/// A fixed pool of worker threads that delivers events to async subscribers (see the [crate
/// docs](crate)). Cloning is cheap and shares the pool; the pool shuts down at
/// [`WorkerPool::shutdown`] or when its last clone is dropped. The drop is a shutdown with a
/// deadline of [`WorkerPool::DROP_DEADLINE`]: it never blocks longer than that plus
/// [`WorkerPool::STOP_GRACE`]; what it abandoned (and any thread it detached) is written to
/// stderr. When the last clone is dropped on a thread of any notify pool (a callback's closure
/// held it), the drop does not wait: a short-lived thread named `NAME-shutdown` does that work.
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// use notify_core::{Event, Notifier, Payload};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// let pool = WorkerPool::new();
/// let notifier = Notifier::new();
/// let count = Arc::new(AtomicU64::new(0));
/// let c = count.clone();
/// pool.subscribe(&notifier, "tick.clock", AsyncOptions::new(), move |_: &Event| { c.fetch_add(1, Ordering::Relaxed); });
/// notifier.instrument("tick.clock", Payload::new, |_| ());
/// pool.flush();
/// assert_eq!(count.load(Ordering::Relaxed), 1);
/// ```
#[derive(Clone)]
pub struct WorkerPool {
    pub(crate) owner: Arc<Owner>,
}

static GLOBAL: OnceLock<WorkerPool> = OnceLock::new();

impl Default for WorkerPool {
    fn default() -> WorkerPool {
        WorkerPool::new()
    }
}

impl WorkerPool {
    /// The most threads a pool runs ([`PoolBuilder::threads`]; more is an error of
    /// [`PoolBuilder::try_build`]).
    pub const MAX_THREADS: usize = 4096;

    /// How long the drop of the last clone delivers queued events before it abandons the rest
    /// (5 s).
    pub const DROP_DEADLINE: Duration = Duration::from_secs(5);

    /// How long [`WorkerPool::shutdown`] waits, after its deadline, for the callbacks in progress
    /// to return (100 ms); threads still in a callback then are detached.
    pub const STOP_GRACE: Duration = Duration::from_millis(100);

    /// A pool with the default settings ([`PoolBuilder`]).
    ///
    /// # Panics
    /// When a thread cannot be spawned.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::new();
    /// assert!(pool.threads() >= 1);
    /// ```
    pub fn new() -> WorkerPool {
        WorkerPool::builder().build()
    }

    /// A builder for a pool with other settings.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(3).build();
    /// assert_eq!(pool.threads(), 3);
    /// ```
    pub fn builder() -> PoolBuilder {
        PoolBuilder::default()
    }

    /// The process-wide pool, started on first use with the default settings (threads named
    /// `notify-global-N`). It is never shut down by notify; [`WorkerPool::shutdown`] on it is final.
    /// Events still queued when the process exits are not delivered: hold a
    /// [`WorkerPool::flush_guard`] in `main` (otherwise their count is written to stderr at exit).
    ///
    /// ```
    /// let a = notify_pool::WorkerPool::global();
    /// assert!(a.threads() >= 1);
    /// ```
    pub fn global() -> &'static WorkerPool {
        GLOBAL.get_or_init(|| WorkerPool::builder().name("notify-global").build())
    }

    /// How many shared worker threads the pool runs (dedicated threads not counted).
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(2).build().threads(), 2);
    /// ```
    pub fn threads(&self) -> usize {
        self.owner.inner.slots.len()
    }

    /// Makes the mailbox of one async subscriber, and the [`Subscriber`] that feeds it, for
    /// [`Notifier::subscribe_all`] and other registry calls. Prefer [`WorkerPool::subscribe`].
    ///
    /// # Errors
    /// The operating system's error when `options` asks for a dedicated thread and it cannot be
    /// spawned.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Pattern};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let (subscriber, handle) = pool.mailbox(AsyncOptions::new(), |_: &Event| {})?;
    /// notifier.subscribe_all([(Pattern::exact("run.job"), subscriber)]);
    /// assert_eq!(handle.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn mailbox(
        &self,
        options: AsyncOptions,
        subscriber: impl AsyncSubscriber,
    ) -> std::io::Result<(Subscriber, AsyncHandle)> {
        let home = self.home(&options)?;
        Ok(WorkerPool::mailbox_in(home, subscriber))
    }

    /// Where mailboxes made with `options` run (a dedicated thread of their own, when asked).
    fn home(&self, options: &AsyncOptions) -> std::io::Result<Arc<Home>> {
        let pool = if options.dedicated_thread {
            self.dedicated_pool()?
        } else {
            self.owner.inner.clone()
        };
        Ok(Arc::new(Home {
            pool,
            config: Config::of(options),
        }))
    }

    /// A mailbox in `home` and its registry subscriber: the registry holds the mailbox's own
    /// `Arc` (one allocation per subscription on the pool's side).
    fn mailbox_in(home: Arc<Home>, subscriber: impl AsyncSubscriber) -> (Subscriber, AsyncHandle) {
        let label = home.config.label.clone();
        let mailbox = Mailbox::new(home, subscriber);
        let mut registered = Subscriber::owned_arc(mailbox.clone());
        if let Some(label) = label {
            registered = registered.named(label);
        }
        (registered, AsyncHandle::new(mailbox, 0))
    }

    fn dedicated_pool(&self) -> std::io::Result<Arc<PoolInner>> {
        let shared = self.owner.inner.shared.clone();
        let mut dedicated = self.owner.dedicated.lock();
        dedicated.reap();
        let name = format!("{}-dedicated-{}", shared.name, dedicated.started);
        dedicated.started += 1;
        let pool = PoolInner::start(shared, 1, &name, true)?;
        if self.owner.inner.state() != worker::RUNNING {
            pool.close();
        }
        dedicated.pools.push(pool.clone());
        Ok(pool)
    }

    /// Subscribes an async subscriber to the events `pattern` matches on `notifier`: events are
    /// delivered on this pool's workers (or a dedicated thread, see [`AsyncOptions::dedicated`]).
    ///
    /// # Panics
    /// When a dedicated thread cannot be spawned.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, Overflow, WorkerPool};
    /// use notify_core::{Event, Notifier, Pattern, Payload};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let sub = pool.subscribe(&notifier, Pattern::glob("*.sql")?, AsyncOptions::new().overflow(Overflow::DropOldest),
    ///     |e: &Event| assert!(e.name().ends_with(".sql")));
    /// notifier.instrument("query.sql", Payload::new, |_| ());
    /// pool.flush();
    /// sub.unsubscribe()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe(
        &self,
        notifier: &Notifier,
        pattern: impl Into<Pattern>,
        options: AsyncOptions,
        subscriber: impl AsyncSubscriber,
    ) -> AsyncSubscription {
        let (registered, handle) = self
            .mailbox(options, subscriber)
            .expect("notify: cannot spawn a dedicated thread");
        let subscription = notifier.subscribe(pattern, registered);
        AsyncSubscription { handle, subscription }
    }

    /// Subscribes many async subscribers in one registry change (O(n), where n single
    /// [`WorkerPool::subscribe`] calls cost O(n²)); the subscriptions come back in order.
    ///
    /// # Panics
    /// When a dedicated thread cannot be spawned.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Pattern};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let subs = pool.subscribe_all(&notifier,
    ///     (0..1000).map(|i| (Pattern::exact(format!("run{i}.job")), AsyncOptions::new(), |_: &Event| {})));
    /// assert_eq!(subs.len(), 1000);
    /// assert_eq!(notifier.subscriber_count(), 1000);
    /// ```
    pub fn subscribe_all<S: AsyncSubscriber>(
        &self,
        notifier: &Notifier,
        subscribers: impl IntoIterator<Item = (Pattern, AsyncOptions, S)>,
    ) -> Vec<AsyncSubscription> {
        let subscribers = subscribers.into_iter();
        let mut handles = Vec::with_capacity(subscribers.size_hint().0);
        let mut pairs = Vec::with_capacity(subscribers.size_hint().0);
        // Consecutive subscriptions with equal options share one `Home` (a dedicated thread is
        // one subscription's own).
        let mut shared: Option<(AsyncOptions, Arc<Home>)> = None;
        for (pattern, options, subscriber) in subscribers {
            let home = match &shared {
                Some((last, home)) if *last == options && !options.dedicated_thread => home.clone(),
                _ => {
                    let home = self.home(&options).expect("notify: cannot spawn a dedicated thread");
                    shared = Some((options, home.clone()));
                    home
                }
            };
            let (registered, handle) = WorkerPool::mailbox_in(home, subscriber);
            pairs.push((pattern, registered));
            handles.push(handle);
        }
        let subscriptions = notifier.subscribe_all(pairs);
        handles
            .into_iter()
            .zip(subscriptions)
            .map(|(handle, subscription)| AsyncSubscription { handle, subscription })
            .collect()
    }

    /// Subscribes many async subscribers to the same `pattern` behind **one** registry
    /// subscription and one shared event log: each event is one registry delivery that appends
    /// the event to the log once and counts it pending once per member with one atomic add, O(1)
    /// in the number of members. Members are read in shards (runs of consecutive members, at most
    /// 64 shards), each with a cursor into the log; a worker takes a batch of a shard's events and
    /// runs the shard's members over it one after another.
    ///
    /// Each member keeps what a single async subscriber has: one invocation at a time, events in
    /// publish order per producing thread, room for `options.capacity` events (a member whose
    /// shard is that far behind loses events by the overflow policy, with exact per-member drop
    /// counts; [`Overflow::Block`](crate::Overflow::Block) blocks the publisher until the slowest shard has room), the
    /// panic policy, and its own [`AsyncHandle`]. Members share `options` and always run on the
    /// shared workers (`dedicated_thread` is ignored). Members of one shard lag together: a member
    /// whose callback blocks delays the other members of its shard (and makes them drop alike
    /// when the shard overflows), so give blocking callbacks [`WorkerPool::subscribe`]. A
    /// slow-subscriber report names the first member of the shard that overflowed. The cheapest way
    /// to hold 100,000s of subscriptions: no registry entry, mailbox or queue per member (48 bytes
    /// each, measured, plus what the callback captures: 56 with one `Arc`).
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// let pool = WorkerPool::builder().threads(2).build();
    /// let notifier = Notifier::new();
    /// let count = Arc::new(AtomicU64::new(0));
    /// let fanout = pool.subscribe_fanout(&notifier, "tick.clock", AsyncOptions::new(), (0..100).map(|_| {
    ///     let c = count.clone();
    ///     move |_: &Event| { c.fetch_add(1, Ordering::Relaxed); }
    /// }));
    /// notifier.instrument("tick.clock", Payload::new, |_| ());
    /// pool.flush();
    /// assert_eq!(count.load(Ordering::Relaxed), 100);
    /// assert_eq!(fanout.members().len(), 100);
    /// assert_eq!(notifier.subscriber_count(), 1);
    /// ```
    pub fn subscribe_fanout<S: AsyncSubscriber>(
        &self,
        notifier: &Notifier,
        pattern: impl Into<Pattern>,
        options: AsyncOptions,
        subscribers: impl IntoIterator<Item = S>,
    ) -> FanoutSubscription {
        let pool = self.owner.inner.clone();
        let config = Arc::new(Config::of(&options));
        let callbacks = subscribers
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn AsyncSubscriber>)
            .collect();
        let group = Arc::new(Group::new(pool, config, callbacks));
        let handles = (0..group.members.len())
            .map(|index| AsyncHandle::new(group.clone(), index))
            .collect();
        let mut registered = Subscriber::owned(Fanout(group.clone()));
        if let Some(label) = options.label {
            registered = registered.named(label);
        }
        FanoutSubscription {
            subscription: notifier.subscribe(pattern, registered),
            members: handles,
            group,
        }
    }

    /// Waits until every event published before this call (on any thread, to any subscriber of
    /// this pool, dedicated threads included) was delivered, dropped by an overflow policy, or
    /// discarded by a detach. Events published meanwhile are not waited for. Blocks without
    /// polling; returns at once on a pool that was shut down.
    ///
    /// Returns true when everything published before the call is finished (also on a pool that
    /// was shut down: what it abandoned is in its [`ShutdownReport`]); false, at once and
    /// without waiting, when called on a thread of **any** notify pool (from a callback, or a
    /// subscriber's `Drop` run by a worker; dedicated threads included): waiting there could
    /// wait for that very callback, or for a pool whose callbacks flush this one (two pools
    /// flushing each other deadlock). Nothing is lost: the events are still queued, and a flush
    /// from another thread waits for them. As [`Overflow::Block`](crate::Overflow::Block), which
    /// does not block a publisher on any pool's thread.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// use std::sync::mpsc;
    ///
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let other = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let (tx, rx) = mpsc::channel();
    /// let o = other.clone();
    /// pool.subscribe(&notifier, "run.job", AsyncOptions::new(), move |_: &Event| {
    ///     tx.send(o.flush()).unwrap(); // on a worker: returns false at once
    /// });
    /// notifier.instrument("run.job", Payload::new, |_| ());
    /// assert!(pool.flush());
    /// assert_eq!(rx.recv().unwrap(), false);
    /// ```
    pub fn flush(&self) -> bool {
        self.flush_until(None)
    }

    /// [`WorkerPool::flush`] with an upper bound: waits at most `timeout` (plus the time to take
    /// a lock no callback holds). True when everything published before the call was delivered,
    /// dropped or discarded; false when the time ran out first (nothing is lost: the events are
    /// still queued, and the next flush waits for them too), and false at once on a thread of any
    /// notify pool, as [`WorkerPool::flush`].
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// assert!(pool.flush_timeout(std::time::Duration::from_secs(1)));
    /// ```
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        self.flush_until(Instant::now().checked_add(timeout))
    }

    fn flush_until(&self, deadline: Option<Instant>) -> bool {
        if worker::on_any_worker() {
            return false;
        }
        // A subscriber flushing from inside a fan-out: this thread's batch ends first (its
        // credits are pending).
        crate::publish::end();
        if self.is_shut_down() {
            return true;
        }
        self.owner.pools().0.iter().all(|pool| pool.flush(deadline))
    }

    /// Panics of this pool's subscribers reported through the failure hook so far (a count):
    /// each panicking callback once, and each subscriber whose drop panicked once
    /// ([`AsyncFailure::in_drop`]).
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(1).build().failures(), 0);
    /// ```
    pub fn failures(&self) -> u64 {
        self.owner
            .inner
            .shared
            .failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Replaces the failure hook, called once per panicking callback on the worker thread, as
    /// [`PoolBuilder::failure_hook`] does at build time (and as notify-core's
    /// `Notifier::set_failure_hook` does for synchronous subscribers). A panic in the hook is
    /// swallowed.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// pool.set_failure_hook(|f: &notify_pool::AsyncFailure| eprintln!("{f}"));
    /// ```
    pub fn set_failure_hook(&self, hook: impl Fn(&AsyncFailure) + Send + Sync + 'static) {
        *self.owner.inner.shared.failure_hook.lock() = Arc::new(hook);
    }

    /// Replaces the slow-subscriber hook ([`PoolBuilder::slow_subscriber_hook`]). A panic in the
    /// hook is swallowed.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// pool.set_slow_subscriber_hook(|s: &notify_pool::SlowSubscriber| eprintln!("{s}"));
    /// ```
    pub fn set_slow_subscriber_hook(&self, hook: impl Fn(&SlowSubscriber) + Send + Sync + 'static) {
        *self.owner.inner.shared.slow_hook.lock() = Arc::new(hook);
    }

    /// A guard that flushes this pool when dropped, waiting at most `timeout`; hold it in `main`
    /// so that events queued when `main` returns are delivered (as `tracing-appender`'s
    /// `WorkerGuard`). What is still pending after `timeout` is counted and written to stderr.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// static DELIVERED: AtomicU64 = AtomicU64::new(0);
    /// let notifier = Notifier::new();
    /// let pool = WorkerPool::global();
    /// let _guard = pool.flush_guard(std::time::Duration::from_secs(5));
    /// pool.subscribe(&notifier, "run.job", AsyncOptions::new(), |_: &Event| {
    ///     DELIVERED.fetch_add(1, Ordering::Relaxed);
    /// });
    /// notifier.instrument("run.job", Payload::new, |_| ());
    /// drop(_guard); // at the end of `main`
    /// assert_eq!(DELIVERED.load(Ordering::Relaxed), 1);
    /// ```
    pub fn flush_guard(&self, timeout: Duration) -> FlushGuard {
        FlushGuard::new(self.clone(), timeout)
    }

    /// Shuts the pool down: refuses new events at once (see [`WorkerPool::rejected`]), delivers
    /// what was queued until `deadline` has passed, then stops every worker after the callback it
    /// is running, discards the rest, and joins every thread (dedicated ones too). The report says
    /// exactly how many accepted events were abandoned. Returns within `deadline` plus
    /// [`WorkerPool::STOP_GRACE`] (plus scheduling delays): a thread whose callback is still
    /// running then is detached, named in [`ShutdownReport::detached`], and the events it holds
    /// are counted as abandoned. Calling it again returns the first report. `Duration::MAX`: no
    /// deadline (waits for every callback, however long).
    ///
    /// # Panics
    /// When called on one of this pool's threads (from one of its callbacks, dedicated threads
    /// included): it would wait for that very callback, so it could neither drain nor report
    /// exactly. The panic is reported like any panicking callback; shut down from another thread.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// pool.subscribe(&notifier, "run.job", AsyncOptions::new(), |_: &Event| {});
    /// notifier.instrument("run.job", Payload::new, |_| ());
    /// let report = pool.shutdown(std::time::Duration::from_secs(5));
    /// assert_eq!((report.delivered, report.abandoned, report.drained), (1, 0, true));
    /// notifier.instrument("run.job", Payload::new, |_| ());
    /// assert_eq!(pool.rejected(), 1);
    /// ```
    pub fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        if worker::on_worker_of(self.owner.inner.shared.family) {
            panic!(
                "notify: WorkerPool::shutdown called from a callback of pool `{}` (on its own thread): it \
                 would wait for that callback; shut the pool down from another thread",
                self.owner.inner.shared.name
            );
        }
        self.owner.shutdown(Instant::now().checked_add(deadline))
    }

    /// True once [`WorkerPool::shutdown`] ran.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// assert!(!pool.is_shut_down());
    /// pool.shutdown(std::time::Duration::ZERO);
    /// assert!(pool.is_shut_down());
    /// ```
    pub fn is_shut_down(&self) -> bool {
        self.owner.inner.state() != worker::RUNNING
    }

    /// Events refused because the pool was shut down (a count, one per subscriber per event).
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(1).build().rejected(), 0);
    /// ```
    pub fn rejected(&self) -> u64 {
        self.owner
            .inner
            .shared
            .rejected
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Events accepted into mailboxes and not yet delivered, dropped or discarded (a count). After
    /// [`WorkerPool::shutdown`] it is 0: the events shutdown abandoned are counted in its report
    /// ([`ShutdownReport::abandoned`]), not here.
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(1).build().pending(), 0);
    /// ```
    pub fn pending(&self) -> u64 {
        let pending: u64 = self.owner.pools().0.iter().map(|p| p.pending()).sum();
        pending.saturating_sub(self.owner.abandoned.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Callbacks that returned or panicked so far (a count, dedicated threads included).
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(1).build().delivered(), 0);
    /// ```
    pub fn delivered(&self) -> u64 {
        let (pools, retired) = self.owner.pools();
        retired + pools.iter().map(|p| p.delivered()).sum::<u64>()
    }

    /// How often each shared worker returned from parking (one count per worker, in worker order).
    /// An idle pool keeps these unchanged: workers park with no timeout.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(2).build();
    /// assert_eq!(pool.wakeups().len(), 2);
    /// ```
    pub fn wakeups(&self) -> Vec<u64> {
        self.owner.inner.wakeups()
    }
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("name", &self.owner.inner.shared.name)
            .field("threads", &self.threads())
            .field("shut_down", &self.is_shut_down())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Mutex;
    use crate::{AsyncFailurePolicy, Overflow};
    use notify_core::Event;
    use notify_core::Payload;

    #[test]
    fn pool_idle_mailbox_is_small() {
        // The mailbox allocation itself (Arc header included) with a capture-free callback; the
        // registry entry is the core's. tests/async_memory.rs measures the whole subscription.
        fn callback(_: &Event) {}
        fn mailbox_size<S: AsyncSubscriber>(_: &S) -> usize {
            std::mem::size_of::<Mailbox<S>>()
        }
        // 72: the oldest queued event is kept beside the lock (`mailbox_core::State::first`); glibc
        // serves 64 and 72 bytes from the same 80-byte chunk.
        let size = mailbox_size(&callback) + 16;
        assert!(size <= 72, "mailbox is {size} bytes");
    }

    #[test]
    fn pool_dedicated_thread_delivers_in_order() {
        let pool = WorkerPool::builder().threads(1).build();
        let notifier = Notifier::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        pool.subscribe(&notifier, "d", AsyncOptions::new().dedicated(), move |e: &Event| {
            let name = std::thread::current().name().unwrap_or_default().to_owned();
            sink.lock()
                .push((e.payload().get("n").and_then(|v| v.as_i64()).unwrap(), name));
        });
        for n in 0..50_u64 {
            notifier.instrument("d", || Payload::new().with("n", n), |_| ());
        }
        pool.flush();
        let seen = seen.lock();
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            (0..50).collect::<Vec<_>>()
        );
        assert!(seen.iter().all(|s| s.1 == "notify-pool-dedicated-0-0"), "{:?}", seen[0]);
        drop(seen);
        let report = pool.shutdown(Duration::from_secs(5));
        assert_eq!((report.delivered, report.abandoned), (50, 0));
    }

    #[test]
    fn pool_closed_dedicated_subscription_is_forgotten() {
        let pool = WorkerPool::builder().threads(1).build();
        let notifier = Notifier::new();
        let subs: Vec<_> = (0..3)
            .map(|_| pool.subscribe(&notifier, "d", AsyncOptions::new().dedicated(), |_: &Event| {}))
            .collect();
        notifier.instrument("d", Payload::new, |_| ());
        subs[0].unsubscribe().unwrap();
        subs[1].handle().close();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            pool.flush();
            // flush reaps ended threads: only the open subscription's pool is left to visit.
            if pool.owner.dedicated.lock().pools.len() == 1 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the closed subscriptions' threads never ended"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(pool.owner.dedicated.lock().retired_delivered, 2);
        assert_eq!(pool.delivered(), 3);
        assert_eq!(pool.shutdown(Duration::from_secs(5)).delivered, 3);
    }

    #[test]
    fn pool_block_policy_waits_for_room_and_loses_nothing() {
        let pool = WorkerPool::builder().threads(1).build();
        let notifier = Notifier::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let sub = pool.subscribe(
            &notifier,
            "b",
            AsyncOptions::new().capacity(2).overflow(Overflow::Block),
            move |e: &Event| sink.lock().push(e.payload().get("n").and_then(|v| v.as_i64()).unwrap()),
        );
        for n in 0..500_u64 {
            notifier.instrument("b", || Payload::new().with("n", n), |_| ());
        }
        pool.flush();
        assert_eq!(*seen.lock(), (0..500).collect::<Vec<_>>());
        assert_eq!(sub.dropped(), 0);
    }

    #[test]
    fn pool_slow_subscriber_is_reported_rate_limited() {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let sink = reports.clone();
        let pool = WorkerPool::builder()
            .threads(1)
            .report_interval(Duration::from_secs(3600))
            .slow_subscriber_hook(move |s: &SlowSubscriber| sink.lock().push(s.dropped()))
            .build();
        let notifier = Notifier::new();
        let gate = Arc::new(std::sync::Barrier::new(2));
        let g = gate.clone();
        let sub = pool.subscribe(&notifier, "s", AsyncOptions::new().capacity(1), move |e: &Event| {
            if e.payload().get("first").is_some() {
                g.wait();
            }
        });
        notifier.instrument("s", || Payload::new().with("first", true), |_| ());
        while sub.queued() == 1 {
            std::thread::yield_now();
        }
        for _ in 0..10 {
            notifier.instrument("s", Payload::new, |_| ());
        }
        gate.wait();
        pool.flush();
        assert_eq!(sub.dropped(), 9);
        assert_eq!(*reports.lock(), [1], "one report per interval, made at the first drop");
    }

    #[test]
    fn pool_fanout_detach_policy_discards_and_counts() {
        let failures = Arc::new(Mutex::new(Vec::new()));
        let sink = failures.clone();
        let pool = WorkerPool::builder()
            .threads(1)
            .failure_hook(move |f: &AsyncFailure| sink.lock().push((f.mailbox(), f.detached())))
            .build();
        let notifier = Notifier::new();
        let fanout = pool.subscribe_fanout(
            &notifier,
            "p",
            AsyncOptions::new().on_failure(AsyncFailurePolicy::Detach),
            (0..2).map(|i| move |_: &Event| assert!(i != 0, "member 0 fails")),
        );
        for _ in 0..3 {
            notifier.instrument("p", Payload::new, |_| ());
        }
        pool.flush();
        let [bad, good] = fanout.members() else { unreachable!() };
        assert!(bad.is_closed());
        assert!(!good.is_closed());
        assert_eq!(*failures.lock(), [(bad.id(), true)]);
        assert_eq!(
            bad.dropped(),
            2,
            "the failed event counts as delivered, the rest as dropped"
        );
        assert_eq!(pool.pending(), 0);
    }
}
