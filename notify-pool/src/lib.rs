//! Async subscribers on a shared worker pool.
//!
//! A [`WorkerPool`] runs a fixed number of worker threads (default: the available parallelism),
//! never a thread per subscription. Each async subscriber has a **mailbox**: a bounded FIFO of
//! shared events (`Arc<Event>`, built once per event by the notifier however many subscribers
//! listen) and a scheduling flag. Publishing pushes into the mailbox on the instrumenting thread;
//! the first push into an idle mailbox hands it to the pool's run queue. A worker takes a bounded
//! batch (64 events by default) per turn, runs the callbacks, and only then marks the mailbox idle
//! or re-queues it, so each subscriber sees its events one at a time, in publish order per
//! producing thread, and 100,000s of subscriptions cost a mailbox each, not a thread. Measured
//! (64-bit Linux, live heap bytes): [`WorkerPool::mailbox`] allocates about 200 bytes; a
//! subscription made by [`WorkerPool::subscribe_all`] about 410 bytes with its registry entry (440
//! with the returned [`AsyncSubscription`]) before any event, and up to 128 bytes more after
//! traffic (a drained mailbox keeps a queue buffer of up to 8 events); a
//! [`WorkerPool::subscribe_fanout`] member 48 bytes, plus what its callback captures.
//!
//! * **Overflow**: each mailbox holds at most [`AsyncOptions::capacity`] events; the
//!   [`Overflow`] policy drops the newest (default: the publisher never blocks), drops the oldest,
//!   or blocks the publisher. [`AsyncHandle::dropped`] counts drops exactly, and a slow
//!   subscriber is reported ([`SlowSubscriber`], default `log::warn!`) at most once per interval.
//! * **Idle**: workers with nothing to do park without a timeout: an idle pool uses no CPU and
//!   records no wake-ups ([`WorkerPool::wakeups`]).
//! * **Flush and shutdown**: [`WorkerPool::flush`] waits until everything published before it was
//!   delivered; [`WorkerPool::shutdown`] delivers what it can before a deadline, reports exactly
//!   how many events it abandoned, and joins every thread.
//! * **After shutdown** the pool does not restart: events for its subscribers are refused, counted
//!   by [`WorkerPool::rejected`], and the first refusal is reported with `log::warn!`.
//!   [`WorkerPool::pending`] is 0 then (what was abandoned is in the [`ShutdownReport`]).
//! * **Panics**: a panicking callback never kills a worker; it is reported once per panic through
//!   the failure hook ([`AsyncFailure`], default `log::error!`) and, per [`PanicPolicy`], the
//!   subscriber is kept or detached.
//! * **Blocking callbacks**: one that blocks holds one worker; [`AsyncOptions::dedicated`] gives it
//!   a thread of its own instead.
//! * **Fan-out**: [`WorkerPool::subscribe_fanout`] puts many subscribers behind one registry
//!   subscription and one shared event log: per event, one registry call, one pending-count update
//!   and one append under the group's lock, whatever the number of members (O(1) for the
//!   publisher). Members are read in shards of consecutive members, each with a cursor into the
//!   log; the same guarantees hold per member (one at a time, in order, bounded, exact counters).
//!
//! ```
//! use notify_pool::{AsyncOptions, WorkerPool};
//! use notify_core::{Event, Notifier, Payload};
//! use std::sync::{Arc, Mutex};
//!
//! let pool = WorkerPool::builder().threads(2).build();
//! let notifier = Notifier::new();
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = seen.clone();
//! let subscription = pool.subscribe(&notifier, "job.run", AsyncOptions::new(), move |e: &Event| {
//!     sink.lock().unwrap().push(e.payload().get("n").and_then(|v| v.as_i64()).unwrap());
//! });
//! for n in 0..100_u64 {
//!     notifier.instrument("job.run", || Payload::new().with("n", n), |_| ());
//! }
//! pool.flush();
//! assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<i64>>());
//! assert_eq!(subscription.dropped(), 0);
//! let report = pool.shutdown(std::time::Duration::from_secs(1));
//! assert_eq!(report.abandoned, 0);
//! ```

mod delivery;
mod escape;
mod exit;
mod group;
mod mailbox;
mod options;
mod padded;
mod pending;
mod sync;
mod unwind;
mod worker;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use self::sync::Mutex;

use notify_core::{Notifier, NotifyError, Pattern, Subscriber, Subscription};

pub use self::delivery::AsyncSubscriber;
pub use self::exit::FlushGuard;
pub use self::options::{AsyncFailure, AsyncOptions, Overflow, PanicPolicy, ShutdownReport, SlowSubscriber};

use self::delivery::{Config, Deliver, Fanout, Group, Mailbox};
use self::worker::{FailureHook, PoolInner, Shared, SlowHook};

/// Configures a [`WorkerPool`].
///
/// ```
/// use notify_pool::WorkerPool;
/// use std::time::Duration;
/// let pool = WorkerPool::builder()
///     .threads(2)
///     .batch(32)
///     .name("exporters")
///     .report_interval(Duration::from_secs(10))
///     .build();
/// assert_eq!(pool.threads(), 2);
/// ```
pub struct PoolBuilder {
    threads: usize,
    batch: usize,
    name: String,
    failure_hook: FailureHook,
    slow_hook: SlowHook,
    report_interval: Duration,
}

impl Default for PoolBuilder {
    fn default() -> PoolBuilder {
        PoolBuilder {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            batch: 64,
            name: "notify-pool".to_owned(),
            failure_hook: Arc::new(|f: &AsyncFailure| log::error!(target: "notify::pool", "{f}")),
            slow_hook: Arc::new(|s: &SlowSubscriber| log::warn!(target: "notify::pool", "{s}")),
            report_interval: Duration::from_secs(1),
        }
    }
}

impl PoolBuilder {
    /// Worker threads (a count, at least 1; default: `std::thread::available_parallelism`).
    ///
    /// ```
    /// assert_eq!(notify_pool::WorkerPool::builder().threads(0).build().threads(), 1);
    /// ```
    #[must_use]
    pub fn threads(mut self, threads: usize) -> PoolBuilder {
        self.threads = threads.max(1);
        self
    }

    /// The most events a worker delivers from one mailbox before it moves to the next scheduled
    /// one (a count, at least 1; default 64): fairness between busy subscribers.
    ///
    /// ```
    /// let _pool = notify_pool::WorkerPool::builder().threads(1).batch(1).build();
    /// ```
    #[must_use]
    pub fn batch(mut self, events: usize) -> PoolBuilder {
        self.batch = events.max(1);
        self
    }

    /// The worker threads' name prefix (default `notify-pool`; threads are `NAME-0`, `NAME-1`, …).
    ///
    /// ```
    /// let _pool = notify_pool::WorkerPool::builder().threads(1).name("audit").build();
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> PoolBuilder {
        self.name = name.into();
        self
    }

    /// Replaces the failure hook, called once per panicking callback, on the worker thread
    /// (default: `log::error!`, target `notify::pool`). A panic in the hook is swallowed.
    ///
    /// ```
    /// let _pool = notify_pool::WorkerPool::builder()
    ///     .threads(1)
    ///     .failure_hook(|f: &notify_pool::AsyncFailure| eprintln!("{f}"))
    ///     .build();
    /// ```
    #[must_use]
    pub fn failure_hook(mut self, hook: impl Fn(&AsyncFailure) + Send + Sync + 'static) -> PoolBuilder {
        self.failure_hook = Arc::new(hook);
        self
    }

    /// Replaces the slow-subscriber hook, called on the publishing thread when a mailbox
    /// overflows, at most once per report interval per mailbox (default: `log::warn!`, target
    /// `notify::pool`). A panic in the hook is swallowed.
    ///
    /// ```
    /// let _pool = notify_pool::WorkerPool::builder()
    ///     .threads(1)
    ///     .slow_subscriber_hook(|s: &notify_pool::SlowSubscriber| eprintln!("{s}"))
    ///     .build();
    /// ```
    #[must_use]
    pub fn slow_subscriber_hook(mut self, hook: impl Fn(&SlowSubscriber) + Send + Sync + 'static) -> PoolBuilder {
        self.slow_hook = Arc::new(hook);
        self
    }

    /// The least time between two slow-subscriber reports of one mailbox (default 1 s). Checked
    /// only when an event overflows: no timer runs.
    ///
    /// ```
    /// let _pool = notify_pool::WorkerPool::builder().threads(1).report_interval(std::time::Duration::ZERO).build();
    /// ```
    #[must_use]
    pub fn report_interval(mut self, interval: Duration) -> PoolBuilder {
        self.report_interval = interval;
        self
    }

    /// Starts the pool's threads.
    ///
    /// # Errors
    /// * [`std::io::ErrorKind::InvalidInput`] when more than [`WorkerPool::MAX_THREADS`] threads
    ///   were asked for;
    /// * [`std::io::ErrorKind::OutOfMemory`] when the threads' state cannot be allocated;
    /// * the operating system's error when a thread cannot be spawned (the threads already
    ///   started are stopped and joined).
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).try_build()?;
    /// # drop(pool);
    /// let absurd = notify_pool::WorkerPool::builder().threads(usize::MAX).try_build();
    /// assert_eq!(absurd.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_build(self) -> std::io::Result<WorkerPool> {
        if self.threads > WorkerPool::MAX_THREADS {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "notify: a worker pool has at most {} threads; {} were asked for",
                    WorkerPool::MAX_THREADS,
                    self.threads
                ),
            ));
        }
        let shared = Arc::new(Shared::new(
            self.name.clone(),
            self.batch,
            self.failure_hook,
            self.slow_hook,
            self.report_interval,
        ));
        let inner = PoolInner::start(shared, self.threads, &self.name, false)?;
        let owner = Arc::new(Owner {
            inner,
            dedicated: Mutex::new(Dedicated::default()),
            report: Mutex::new(None),
            abandoned: std::sync::atomic::AtomicU64::new(0),
        });
        exit::watch(&owner);
        Ok(WorkerPool { owner })
    }

    /// Starts the pool's threads.
    ///
    /// # Panics
    /// When [`PoolBuilder::try_build`] fails (too many threads asked for, or a thread cannot be
    /// spawned).
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # drop(pool);
    /// ```
    pub fn build(self) -> WorkerPool {
        self.try_build()
            .expect("notify: cannot spawn the worker pool's threads")
    }
}

struct Owner {
    inner: Arc<PoolInner>,
    /// The pools of one thread each that dedicated subscriptions run on.
    dedicated: Mutex<Dedicated>,
    /// Set by the first shutdown; later calls return it.
    report: Mutex<Option<ShutdownReport>>,
    /// The events the shutdown abandoned (they stay counted in the pools; `pending` hides them).
    abandoned: std::sync::atomic::AtomicU64,
}

impl Drop for Owner {
    fn drop(&mut self) {
        if self.report.get_mut().is_some() {
            return;
        }
        let deadline = Instant::now().checked_add(WorkerPool::DROP_DEADLINE);
        if !worker::on_worker_of(self.inner.shared.family) {
            let report = self.shutdown(deadline);
            exit::report_dropped(&self.inner.shared.name, &report);
            return;
        }
        // The last clone was dropped on one of the pool's own threads (a callback's closure held
        // it): waiting here for the queued events would wait for this very thread. A short-lived
        // thread shuts the pool down instead, delivering what is queued (for at most the drop
        // deadline) and joining the workers (this one included, once it is back in its loop).
        let (pools, retired) = self.pools();
        let handoff = pools.clone();
        let name = self.inner.shared.name.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{name}-shutdown"))
            .spawn(move || {
                let report = finish(&handoff, deadline, retired);
                exit::report_dropped(&name, &report);
            });
        if spawned.is_err() {
            // No thread for the hand-off: stop without draining (what is queued is abandoned).
            for pool in &pools {
                pool.close();
            }
            for pool in &pools {
                pool.stop();
            }
        }
    }
}

/// The dedicated threads' pools, and what the ended ones left.
#[derive(Default)]
struct Dedicated {
    /// Running (or ending, not yet joined) dedicated pools.
    pools: Vec<Arc<PoolInner>>,
    /// Dedicated threads started so far (names them).
    started: u64,
    /// Callbacks delivered by dedicated threads that ended and were joined.
    retired_delivered: u64,
}

impl Dedicated {
    /// Joins and forgets the dedicated pools whose subscription was closed and whose thread ended,
    /// keeping their delivered count.
    fn reap(&mut self) {
        let mut retired = 0;
        self.pools.retain(|pool| {
            if pool.retired() {
                pool.join(None);
                retired += pool.delivered();
                false
            } else {
                true
            }
        });
        self.retired_delivered += retired;
    }
}

/// Shuts `pools` down: refuses new events, drains until `deadline`, stops the threads, and joins
/// them, waiting at most [`WorkerPool::STOP_GRACE`] more (when there is a deadline) for the
/// callbacks in progress; threads still in a callback then are detached and named in the report.
/// `retired_delivered`: callbacks delivered by dedicated threads that already ended.
fn finish(pools: &[Arc<PoolInner>], deadline: Option<Instant>, retired_delivered: u64) -> ShutdownReport {
    for pool in pools {
        pool.close();
    }
    let mut drained = true;
    for pool in pools {
        drained &= pool.drain(deadline);
    }
    for pool in pools {
        pool.stop();
    }
    let until = deadline.map(|_| Instant::now() + WorkerPool::STOP_GRACE);
    let mut detached = Vec::new();
    for pool in pools {
        detached.extend(pool.join(until));
    }
    // Publishers that entered before the close finish their publish (refused, dropped or
    // abandoned), so the report counts each of their events exactly once.
    for pool in pools {
        pool.wait_publishers(until);
    }
    ShutdownReport {
        delivered: retired_delivered + pools.iter().map(|p| p.delivered()).sum::<u64>(),
        abandoned: pools.iter().map(|p| p.pending()).sum(),
        drained,
        detached,
    }
}

impl Owner {
    /// The shared pool and the live dedicated ones (ended dedicated threads are joined and
    /// forgotten first), with the callbacks the ended ones delivered.
    fn pools(&self) -> (Vec<Arc<PoolInner>>, u64) {
        let mut dedicated = self.dedicated.lock();
        dedicated.reap();
        let mut pools = vec![self.inner.clone()];
        pools.extend(dedicated.pools.iter().cloned());
        (pools, dedicated.retired_delivered)
    }

    fn shutdown(&self, deadline: Option<Instant>) -> ShutdownReport {
        let mut report = self.report.lock();
        if let Some(done) = &*report {
            return done.clone();
        }
        // Close first, so no dedicated subscription can be added meanwhile from another thread.
        self.inner.close();
        let (pools, retired) = self.pools();
        let done = finish(&pools, deadline, retired);
        self.abandoned
            .store(done.abandoned, std::sync::atomic::Ordering::SeqCst);
        *report = Some(done.clone());
        done
    }
}

/// A fixed pool of worker threads that delivers events to async subscribers (see the [module
/// docs](self)). Cloning is cheap and shares the pool; the pool shuts down at
/// [`WorkerPool::shutdown`] or when its last clone is dropped. The drop is a shutdown with a
/// deadline of [`WorkerPool::DROP_DEADLINE`]: it never blocks longer than that plus
/// [`WorkerPool::STOP_GRACE`]; what it abandoned (and any thread it detached) is written to
/// stderr. When the last clone is dropped on one of the pool's own threads (a callback's closure
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
/// pool.subscribe(&notifier, "tick", AsyncOptions::new(), move |_: &Event| { c.fetch_add(1, Ordering::Relaxed); });
/// notifier.instrument("tick", Payload::new, |_| ());
/// pool.flush();
/// assert_eq!(count.load(Ordering::Relaxed), 1);
/// ```
#[derive(Clone)]
pub struct WorkerPool {
    owner: Arc<Owner>,
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
    /// notifier.subscribe_all([(Pattern::exact("x"), subscriber)]);
    /// assert_eq!(handle.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn mailbox(
        &self,
        options: AsyncOptions,
        subscriber: impl AsyncSubscriber,
    ) -> std::io::Result<(Subscriber, AsyncHandle)> {
        let pool = if options.dedicated_thread {
            self.dedicated_pool()?
        } else {
            self.owner.inner.clone()
        };
        let mailbox = Arc::new(Mailbox::new(pool, Config::of(&options), Box::new(subscriber)));
        let mut registered = Subscriber::owned(Deliver(mailbox.clone()));
        if let Some(label) = options.label {
            registered = registered.named(label);
        }
        Ok((registered, AsyncHandle::mailbox(mailbox)))
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
    /// let sub = pool.subscribe(&notifier, Pattern::glob("sql.*")?, AsyncOptions::new().overflow(Overflow::DropOldest),
    ///     |e: &Event| assert!(e.name().starts_with("sql.")));
    /// notifier.instrument("sql.query", Payload::new, |_| ());
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
    ///     (0..1000).map(|i| (Pattern::exact(format!("job.{i}")), AsyncOptions::new(), |_: &Event| {})));
    /// assert_eq!(subs.len(), 1000);
    /// assert_eq!(notifier.subscriber_count(), 1000);
    /// ```
    pub fn subscribe_all<S: AsyncSubscriber>(
        &self,
        notifier: &Notifier,
        subscribers: impl IntoIterator<Item = (Pattern, AsyncOptions, S)>,
    ) -> Vec<AsyncSubscription> {
        let mut handles = Vec::new();
        let mut pairs = Vec::new();
        for (pattern, options, subscriber) in subscribers {
            let (registered, handle) = self
                .mailbox(options, subscriber)
                .expect("notify: cannot spawn a dedicated thread");
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
    /// counts; [`Overflow::Block`] blocks the publisher until the slowest shard has room), the
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
    /// let fanout = pool.subscribe_fanout(&notifier, "tick", AsyncOptions::new(), (0..100).map(|_| {
    ///     let c = count.clone();
    ///     move |_: &Event| { c.fetch_add(1, Ordering::Relaxed); }
    /// }));
    /// notifier.instrument("tick", Payload::new, |_| ());
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
        let config = Config::of(&options);
        let callbacks = subscribers
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn AsyncSubscriber>)
            .collect();
        let group = Arc::new(Group::new(pool, config, callbacks));
        let handles = (0..group.members.len())
            .map(|index| AsyncHandle {
                target: Target::Member(group.clone(), index),
            })
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
    /// # Panics
    /// When called on one of this pool's threads (from one of its callbacks, dedicated threads
    /// included): it would wait for that very callback and never return. The panic is reported
    /// like any panicking callback.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// pool.flush();
    /// ```
    pub fn flush(&self) {
        self.flush_until(None, "flush");
    }

    /// [`WorkerPool::flush`] with an upper bound: waits at most `timeout` (plus the time to take
    /// a lock no callback holds). True when everything published before the call was delivered,
    /// dropped or discarded; false when the time ran out first (nothing is lost: the events are
    /// still queued, and the next flush waits for them too).
    ///
    /// # Panics
    /// When called on one of this pool's threads, as [`WorkerPool::flush`].
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// assert!(pool.flush_timeout(std::time::Duration::from_secs(1)));
    /// ```
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        self.flush_until(Instant::now().checked_add(timeout), "flush_timeout")
    }

    fn flush_until(&self, deadline: Option<Instant>, method: &str) -> bool {
        if worker::on_worker_of(self.owner.inner.shared.family) {
            panic!(
                "notify: WorkerPool::{method} called from a callback of pool `{}` (on its own thread): it \
                 would wait for that callback and never return; flush from another thread",
                self.owner.inner.shared.name
            );
        }
        if self.is_shut_down() {
            return true;
        }
        self.owner.pools().0.iter().all(|pool| pool.flush(deadline))
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
    /// pool.subscribe(&notifier, "x", AsyncOptions::new(), |_: &Event| {});
    /// notifier.instrument("x", Payload::new, |_| ());
    /// let report = pool.shutdown(std::time::Duration::from_secs(5));
    /// assert_eq!((report.delivered, report.abandoned, report.drained), (1, 0, true));
    /// notifier.instrument("x", Payload::new, |_| ());
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
        pending.saturating_sub(self.owner.abandoned.load(std::sync::atomic::Ordering::SeqCst))
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

/// One async subscriber's mailbox, for its counters. Cloning shares it.
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let (_subscriber, handle) = pool.mailbox(AsyncOptions::new(), |_: &notify_core::Event| {})?;
/// assert_eq!((handle.queued(), handle.dropped(), handle.is_closed()), (0, 0, false));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct AsyncHandle {
    target: Target,
}

/// What an [`AsyncHandle`] reads: a mailbox, or member `usize` of a fan-out group.
#[derive(Clone)]
enum Target {
    Mailbox(Arc<Mailbox>),
    Member(Arc<Group>, usize),
}

impl AsyncHandle {
    fn mailbox(mailbox: Arc<Mailbox>) -> AsyncHandle {
        AsyncHandle {
            target: Target::Mailbox(mailbox),
        }
    }

    /// The mailbox id, unique within its pool (counting from 1); failure and slow-subscriber
    /// reports name it.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.id(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn id(&self) -> u64 {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.id,
            Target::Member(group, index) => group.first_id + *index as u64,
        }
    }

    /// The label from [`AsyncOptions::named`].
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(notify_pool::AsyncOptions::new().named("a"), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.label(), Some("a"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn label(&self) -> Option<&str> {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.config.label.as_deref(),
            Target::Member(group, _) => group.config.label.as_deref(),
        }
    }

    /// Events this subscriber will never receive (an exact count): refused or evicted by its
    /// overflow policy, plus those queued when it was detached after a panic and those that reached
    /// it after it was closed.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
    /// let g = gate.clone();
    /// let sub = pool.subscribe(&notifier, "x", AsyncOptions::new().capacity(1), move |_: &Event| { g.wait(); });
    /// notifier.instrument("x", Payload::new, |_| ()); // taken by the worker, which waits at the gate
    /// while pool.pending() == 1 && sub.queued() == 1 { std::thread::yield_now(); }
    /// notifier.instrument("x", Payload::new, |_| ()); // queued
    /// notifier.instrument("x", Payload::new, |_| ()); // dropped: the mailbox holds 1
    /// assert_eq!(sub.dropped(), 1);
    /// gate.wait();
    /// gate.wait();
    /// pool.flush();
    /// ```
    pub fn dropped(&self) -> u64 {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.core.dropped(),
            Target::Member(group, index) => group.dropped(*index),
        }
    }

    /// Events queued in the mailbox now (a count; those a worker already took are not counted).
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn queued(&self) -> usize {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.core.len(),
            Target::Member(group, index) => group.queued(*index),
        }
    }

    /// True when the mailbox refuses events: detached after a panic ([`PanicPolicy::Detach`]), or
    /// unsubscribed.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert!(!handle.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.core.is_closed(),
            Target::Member(group, index) => group.is_closed(*index),
        }
    }

    /// Refuses events from now on; the queued ones are still delivered.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// handle.close();
    /// assert!(handle.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) {
        match &self.target {
            Target::Mailbox(mailbox) => mailbox.close(),
            Target::Member(group, index) => group.close(*index..*index + 1),
        }
    }
}

impl std::fmt::Debug for AsyncHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncHandle")
            .field("id", &self.id())
            .field("label", &self.label())
            .field("queued", &self.queued())
            .field("dropped", &self.dropped())
            .finish()
    }
}

/// An async subscriber subscribed on a notifier: its registry [`Subscription`] and its mailbox
/// ([`AsyncHandle`]). Dropping it does not unsubscribe (as for every subscription).
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = notify_core::Notifier::new();
/// let sub = pool.subscribe(&notifier, "x", AsyncOptions::new(), |_: &notify_core::Event| {});
/// assert_eq!(sub.subscription().id(), 1);
/// assert_eq!(sub.dropped(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct AsyncSubscription {
    handle: AsyncHandle,
    subscription: Subscription,
}

impl AsyncSubscription {
    /// The mailbox.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.handle().queued(), 0);
    /// ```
    pub fn handle(&self) -> &AsyncHandle {
        &self.handle
    }

    /// The registry subscription.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(notifier.listeners_for("x"), vec![(sub.subscription().id(), "owned")]);
    /// ```
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// [`AsyncHandle::dropped`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.handle.dropped()
    }

    /// [`AsyncHandle::queued`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.queued(), 0);
    /// ```
    pub fn queued(&self) -> usize {
        self.handle.queued()
    }

    /// [`AsyncHandle::is_closed`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// assert!(!sub.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Removes the subscription from its notifier and closes the mailbox; events already queued
    /// are still delivered.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when the subscription was already removed.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "x", Default::default(), |_: &notify_core::Event| {});
    /// sub.unsubscribe()?;
    /// assert!(!notifier.listening("x"));
    /// assert!(sub.unsubscribe().is_err());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn unsubscribe(&self) -> Result<(), NotifyError> {
        self.handle.close();
        self.subscription.unsubscribe()
    }
}

/// Many async subscribers behind one registry subscription ([`WorkerPool::subscribe_fanout`]).
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = notify_core::Notifier::new();
/// let fanout = pool.subscribe_fanout(&notifier, "x", AsyncOptions::new(), (0..3).map(|_| |_: &notify_core::Event| {}));
/// assert_eq!(fanout.members().len(), 3);
/// fanout.unsubscribe()?;
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
pub struct FanoutSubscription {
    subscription: Subscription,
    members: Vec<AsyncHandle>,
    group: Arc<Group>,
}

impl std::fmt::Debug for FanoutSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanoutSubscription")
            .field("subscription", &self.subscription)
            .field("members", &self.members.len())
            .finish()
    }
}

impl FanoutSubscription {
    /// The members' mailboxes, in the order given.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "x", Default::default(), [|_: &notify_core::Event| {}]);
    /// assert_eq!(fanout.members()[0].dropped(), 0);
    /// ```
    pub fn members(&self) -> &[AsyncHandle] {
        &self.members
    }

    /// The one registry subscription.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "x", Default::default(), [|_: &notify_core::Event| {}]);
    /// assert_eq!(fanout.subscription().id(), 1);
    /// ```
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// Removes the registry subscription and closes every member; queued events are still
    /// delivered.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it was already removed.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "x", Default::default(), [|_: &notify_core::Event| {}]);
    /// fanout.unsubscribe()?;
    /// assert!(fanout.members()[0].is_closed());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn unsubscribe(&self) -> Result<(), NotifyError> {
        self.group.close(0..self.group.members.len());
        self.subscription.unsubscribe()
    }
}

/// Values for doc examples only; not a stable API.
#[doc(hidden)]
pub mod __doc {
    use super::*;

    pub fn failure() -> AsyncFailure {
        AsyncFailure {
            mailbox: 7,
            subscriber: Cow::Borrowed("audit"),
            event: "x".to_owned(),
            message: "boom".to_owned(),
            detached: false,
        }
    }

    pub fn slow() -> SlowSubscriber {
        SlowSubscriber {
            mailbox: 7,
            subscriber: Cow::Borrowed("audit"),
            capacity: 16,
            dropped: 3,
            overflow: Overflow::DropNewest,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use notify_core::Event;
    use notify_core::Payload;

    #[test]
    fn pool_idle_mailbox_is_small() {
        // The mailbox allocation itself (Arc header included); the registry entry is the core's.
        let size = std::mem::size_of::<Mailbox>() + 16;
        assert!(size <= 160, "mailbox is {size} bytes");
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
            AsyncOptions::new().on_panic(PanicPolicy::Detach),
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
