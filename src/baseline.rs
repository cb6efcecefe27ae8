//! The thread-per-subscription baseline that the worker pool is measured against, shared by
//! `benches/async_delivery.rs` and `examples/fanout.rs`: one OS thread per subscription, each fed
//! by its own channel, and a [`Countdown`] that wakes the measuring thread when every thread got
//! its round of events.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle, Thread};

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};

/// Counts down finished units of work and unparks the waiting thread (the one that made it) at
/// zero. Set the count with [`Countdown::expect`] before each round.
#[derive(Debug)]
pub struct Countdown {
    remaining: AtomicUsize,
    waiter: Thread,
}

impl Countdown {
    /// A countdown at zero whose waiter is the calling thread.
    pub fn new() -> Arc<Countdown> {
        Arc::new(Countdown {
            remaining: AtomicUsize::new(0),
            waiter: thread::current(),
        })
    }

    /// Starts a round of `n` units.
    pub fn expect(&self, n: usize) {
        self.remaining.store(n, Ordering::Release);
    }

    /// `n` units are done; the last one unparks the waiter.
    pub fn done(&self, n: usize) {
        if n > 0 && self.remaining.fetch_sub(n, Ordering::AcqRel) == n {
            self.waiter.unpark();
        }
    }

    /// Parks the waiter until the round is done.
    pub fn wait(&self) {
        while self.remaining.load(Ordering::Acquire) > 0 {
            thread::park();
        }
    }
}

/// One thread per subscription, each with its own channel (stacks of 64 KiB, so 10,000 threads
/// fit; spawning fails near 16,000 on a small machine).
#[derive(Debug)]
pub struct ThreadPerSubscription {
    senders: Vec<mpsc::Sender<Arc<Event>>>,
    handles: Vec<JoinHandle<()>>,
    countdown: Arc<Countdown>,
}

/// The registry's view of one thread: sends the shared event into its channel.
struct ToThread(mpsc::Sender<Arc<Event>>);

impl OwnedEventSubscriber for ToThread {
    fn deliver(&self, event: &Arc<Event>) {
        let _ = self.0.send(event.clone());
    }
}

impl ThreadPerSubscription {
    /// Spawns `n` threads; each calls `callback` for every event and counts one unit done per
    /// `per_round` events.
    ///
    /// # Panics
    /// When a thread cannot be spawned.
    pub fn start(n: usize, per_round: u64, callback: fn(&Event)) -> ThreadPerSubscription {
        let countdown = Countdown::new();
        let mut senders = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = mpsc::channel::<Arc<Event>>();
            let countdown = countdown.clone();
            let handle = thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    for (seen, event) in (1_u64..).zip(rx) {
                        callback(&event);
                        if seen.is_multiple_of(per_round) {
                            countdown.done(1);
                        }
                    }
                })
                .expect("spawn a thread");
            senders.push(tx);
            handles.push(handle);
        }
        ThreadPerSubscription {
            senders,
            handles,
            countdown,
        }
    }

    /// Subscribes every thread to the exact name `name` on `notifier`, in one registry change.
    pub fn subscribe(&self, notifier: &Notifier, name: &str) -> Vec<Subscription> {
        notifier.subscribe_all(
            self.senders
                .iter()
                .map(|tx| (Pattern::exact(name), Subscriber::owned(ToThread(tx.clone())))),
        )
    }

    /// Runs one round: `publish` (which must give every thread `per_round` events), then waits
    /// until every thread counted its round done.
    pub fn round(&self, publish: impl FnOnce()) {
        self.countdown.expect(self.handles.len());
        publish();
        self.countdown.wait();
    }

    /// Ends the threads (their channels close once the registry entries holding the other
    /// senders are gone: unsubscribe first) and joins them.
    pub fn stop(self) {
        drop(self.senders);
        for handle in self.handles {
            let _ = handle.join();
        }
    }
}
