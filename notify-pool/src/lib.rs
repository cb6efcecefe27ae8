//! Async subscribers on a shared worker pool.
//!
//! A [`WorkerPool`] runs a fixed number of worker threads (default: the available parallelism),
//! never a thread per subscription. Each async subscriber has a **mailbox**: a bounded FIFO of
//! shared events (`Arc<Event>`, built once per event by the notifier however many subscribers
//! listen) and a scheduling flag. Publishing pushes into the mailbox on the instrumenting thread;
//! the first push into an idle mailbox hands it to the pool's run queue. When one event reaches
//! many mailboxes of a pool (one fan-out), the publisher passes the pool's door once, counts
//! events as pending 128 at a time, and pushes the mailboxes it made ready 64 at a time under one
//! lock, the rest when the fan-out ends (notify-core's
//! [`defer_to_fanout_end`](notify_core::__private::defer_to_fanout_end)). A worker takes a bounded
//! batch (64 events by default) per turn, runs the callbacks, and only then marks the mailbox idle
//! or re-queues it, so each subscriber sees its events one at a time, in publish order per
//! producing thread, and 100,000s of subscriptions cost a mailbox each, not a thread. Measured
//! (64-bit Linux, live heap bytes, `tests/async_memory.rs`): a mailbox is one 72-byte allocation,
//! which the registry holds directly as its subscriber (plus what the callback captures; the
//! callback is stored inline) and which holds the oldest queued event beside its lock; the
//! options and pool it runs with are shared by all the subscriptions of one
//! [`WorkerPool::subscribe_all`] call with equal options (64 bytes once, or per
//! [`WorkerPool::mailbox`] call). A `subscribe_all` subscription costs 196 bytes with its
//! registry entry before any event (124 of them notify-core's entry and listener; 236 with the
//! returned [`AsyncSubscription`]), and up to 176 bytes more after traffic (the queue behind the
//! first event, allocated when a second one waits, with the drop counters, keeps a buffer of up
//! to 8 events once drained); a
//! [`WorkerPool::subscribe_fanout`] member 48 bytes, plus what its callback captures.
//!
//! * **Overflow**: each mailbox holds at most [`AsyncOptions::capacity`] events; the
//!   [`Overflow`] policy drops the newest (default: the publisher never blocks), drops the oldest,
//!   or blocks the publisher. [`AsyncHandle::dropped`] counts drops exactly, and a slow
//!   subscriber is reported ([`SlowSubscriber`], default `log::warn!`) at most once per interval.
//! * **Idle**: workers with nothing to do park without a timeout: an idle pool uses no CPU and
//!   records no wake-ups ([`WorkerPool::wakeups`]).
//! * **Flush and shutdown**: [`WorkerPool::flush`] waits until everything published before it was
//!   delivered (on a thread of any notify pool it returns false at once: waiting there could
//!   deadlock); [`WorkerPool::shutdown`] delivers what it can before a deadline, reports exactly
//!   how many events it abandoned, and joins every thread.
//! * **After shutdown** the pool does not restart: events for its subscribers are refused, counted
//!   by [`WorkerPool::rejected`], and the first refusal is reported with `log::warn!`.
//!   [`WorkerPool::pending`] is 0 then (what was abandoned is in the [`ShutdownReport`]).
//! * **Panics**: a panicking callback never kills a worker; it is reported once per panic through
//!   the failure hook ([`AsyncFailure`], default `log::error!`) and, per [`AsyncFailurePolicy`], the
//!   subscriber is kept or detached. The same holds for a subscriber's `Drop`, wherever its last
//!   reference goes (a worker, shutdown, the thread that unsubscribed): caught, reported once
//!   ([`AsyncFailure::in_drop`]) and counted ([`WorkerPool::failures`]).
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
//! let subscription = pool.subscribe(&notifier, "run.job", AsyncOptions::new(), move |e: &Event| {
//!     sink.lock().unwrap().push(e.payload().get("n").and_then(|v| v.as_i64()).unwrap());
//! });
//! for n in 0..100_u64 {
//!     notifier.instrument("run.job", || Payload::new().with("n", n), |_| ());
//! }
//! pool.flush();
//! assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<i64>>());
//! assert_eq!(subscription.dropped(), 0);
//! let report = pool.shutdown(std::time::Duration::from_secs(1));
//! assert_eq!(report.abandoned, 0);
//! ```

mod builder;
mod config;
mod exit;
mod group;
mod group_core;
mod handle;
mod mailbox;
mod mailbox_core;
mod mailbox_id;
mod options;
mod padded;
mod pending;
mod pool;
mod publish;
mod run_queue;
mod shutdown;
mod slot;
mod subscriber;
mod subscription;
mod sync;
mod unwind;
mod worker;

pub use self::builder::PoolBuilder;
pub use self::exit::FlushGuard;
pub use self::handle::AsyncHandle;
pub use self::mailbox_id::MailboxId;
pub use self::options::{AsyncFailure, AsyncFailurePolicy, AsyncOptions, Overflow, ShutdownReport, SlowSubscriber};
pub use self::pool::WorkerPool;
pub use self::subscriber::AsyncSubscriber;
pub use self::subscription::{AsyncSubscription, FanoutSubscription};

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
