//! [`PoolBuilder`]: the settings of a [`WorkerPool`] and the start of its threads.

use std::sync::Arc;
use std::time::Duration;

use crate::shutdown::{Dedicated, Owner};
use crate::sync::Mutex;
use crate::worker::{FailureHook, PoolInner, Shared, SlowHook};
use crate::{exit, AsyncFailure, SlowSubscriber, WorkerPool};

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
