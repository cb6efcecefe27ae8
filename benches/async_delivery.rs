//! Async delivery on the worker pool (issue 6), with its baselines in the same run:
//!
//! * `subscriptions/{pool,pool_fanout,threads}/N`: N subscriptions x 10 events each, from the first
//!   publish until every event was delivered. `pool`: N registry subscriptions on the shared pool;
//!   `pool_fanout`: N mailboxes behind one registry subscription; `threads`: one OS thread per
//!   subscription fed by a channel (up to 10,000 only: spawning fails near 16,000 here).
//! * `fanout/{pool_fanout,pool,peer_per_subscriber,peer_broadcast}/N`: deliveries per second from
//!   one producer to N subscribers (a delivery is one callback run for one event). `pool_fanout`:
//!   [`WorkerPool::subscribe_fanout`] (one registry subscription for the N members); `pool`: N
//!   registry subscriptions on the shared pool. The two peers are hand-built on crossbeam-channel
//!   with as many workers as the pool has threads:
//!   - `peer_per_subscriber`: the fair peer, the shape of our semantics. One bounded channel per
//!     subscriber (per-subscriber FIFO, capacity `max(1024, events per iteration)`, so the producer
//!     never blocks in the measured run) and a scheduled flag per subscriber; the producer sends the
//!     event into each of the N channels and puts a subscriber whose flag it set on a shared ready
//!     queue (an unbounded crossbeam channel); a worker takes a subscriber off the ready queue,
//!     drains up to 64 events from its channel, then clears the flag and re-queues it if events
//!     remain. Each subscriber runs on one worker at a time, in order: O(N) channel sends (and
//!     `Arc` clones) per event on the producer.
//!   - `peer_broadcast`: one channel per *worker*, each worker running its share of the N
//!     callbacks for every event: O(1) per event on the producer, but no per-subscriber queue,
//!     capacity or drop counter, and a slow subscriber stalls its worker's whole share. An upper
//!     bound for any design with per-subscriber state, not a like-for-like peer.
//!
//! Short warm-up and measurement, 10 samples: the file runs in a few minutes on 2 cores. The
//! numbers are noisy on a shared VM; compare ratios within one run.

use std::hint::black_box;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use notify_app::baseline::{Countdown, ThreadPerSubscription};
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
use notify_pool::{AsyncOptions, WorkerPool};

const EVENTS_PER_SUBSCRIPTION: u64 = 10;

fn noop(e: &Event) {
    black_box(e.id());
}

/// The broadcast peer: a fan-out hand-built on crossbeam-channel, one channel per worker, each
/// worker calling its share of the subscribers for every event.
struct BroadcastPeer {
    senders: Vec<crossbeam_channel::Sender<Arc<Event>>>,
    handles: Vec<JoinHandle<()>>,
    countdown: Arc<Countdown>,
}

/// A subscriber callback of the peer.
type Callback = Box<dyn Fn(&Event) + Send>;

struct Broadcast(Vec<crossbeam_channel::Sender<Arc<Event>>>);

impl OwnedEventSubscriber for Broadcast {
    fn deliver(&self, event: &Arc<Event>) {
        for tx in &self.0 {
            let _ = tx.send(event.clone());
        }
    }
}

impl BroadcastPeer {
    fn start(subscribers: usize, workers: usize, per_round: u64) -> BroadcastPeer {
        let workers = workers.min(subscribers).max(1);
        let countdown = Countdown::new();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for w in 0..workers {
            let share = subscribers / workers + usize::from(w < subscribers % workers);
            let callbacks: Vec<Callback> = (0..share).map(|_| Box::new(noop) as _).collect();
            let (tx, rx) = crossbeam_channel::bounded::<Arc<Event>>(4096);
            let countdown = countdown.clone();
            handles.push(thread::spawn(move || {
                let mut seen = 0;
                for event in rx {
                    for callback in &callbacks {
                        callback(&event);
                    }
                    seen += 1;
                    if seen % per_round == 0 {
                        countdown.done(1);
                    }
                }
            }));
            senders.push(tx);
        }
        BroadcastPeer {
            senders,
            handles,
            countdown,
        }
    }

    fn stop(self, subscription: notify_core::Subscription) {
        let _ = subscription.unsubscribe();
        drop(self.senders);
        for handle in self.handles {
            let _ = handle.join();
        }
    }
}

/// One subscriber of the per-subscriber peer: its bounded channel and scheduling flag.
struct PeerSubscriber {
    tx: crossbeam_channel::Sender<Arc<Event>>,
    rx: crossbeam_channel::Receiver<Arc<Event>>,
    scheduled: AtomicBool,
    callback: SharedCallback,
}

/// A subscriber callback of the per-subscriber peer (any worker may run it, one at a time).
type SharedCallback = Box<dyn Fn(&Event) + Send + Sync>;

/// The fair peer: one bounded crossbeam channel per subscriber, a shared ready queue of scheduled
/// subscribers, and `workers` threads that drain a subscriber at a time (see the module docs).
struct PerSubscriberPeer {
    subscribers: Arc<[PeerSubscriber]>,
    ready: crossbeam_channel::Sender<usize>,
    handles: Vec<JoinHandle<()>>,
    countdown: Arc<Countdown>,
}

/// The registry's view of the per-subscriber peer.
struct SendEach {
    subscribers: Arc<[PeerSubscriber]>,
    ready: crossbeam_channel::Sender<usize>,
}

impl OwnedEventSubscriber for SendEach {
    fn deliver(&self, event: &Arc<Event>) {
        for (index, subscriber) in self.subscribers.iter().enumerate() {
            let _ = subscriber.tx.send(event.clone());
            // Pairs with the worker's fence: either it sees this event, or this sees its cleared flag.
            fence(Ordering::SeqCst);
            if !subscriber.scheduled.swap(true, Ordering::AcqRel) {
                let _ = self.ready.send(index);
            }
        }
    }
}

impl PerSubscriberPeer {
    const BATCH: usize = 64;
    /// Sent once per worker on the ready queue to end it (workers hold senders to re-queue, so the
    /// queue never disconnects by itself).
    const STOP: usize = usize::MAX;

    fn start(subscribers: usize, workers: usize, capacity: usize) -> PerSubscriberPeer {
        let subscribers: Arc<[PeerSubscriber]> = (0..subscribers)
            .map(|_| {
                let (tx, rx) = crossbeam_channel::bounded(capacity);
                PeerSubscriber {
                    tx,
                    rx,
                    scheduled: AtomicBool::new(false),
                    callback: Box::new(noop),
                }
            })
            .collect();
        let (ready, queue) = crossbeam_channel::unbounded::<usize>();
        let countdown = Countdown::new();
        let handles = (0..workers.max(1))
            .map(|_| {
                let subscribers = subscribers.clone();
                let queue = queue.clone();
                let ready = ready.clone();
                let countdown = countdown.clone();
                thread::spawn(move || {
                    for index in queue {
                        if index == Self::STOP {
                            return;
                        }
                        let subscriber = &subscribers[index];
                        let mut ran = 0;
                        while let Ok(event) = subscriber.rx.try_recv() {
                            (subscriber.callback)(&event);
                            ran += 1;
                            if ran == Self::BATCH {
                                break;
                            }
                        }
                        countdown.done(ran);
                        if ran == Self::BATCH {
                            // Events may remain: keep the flag, go to the back of the ready queue.
                            let _ = ready.send(index);
                            continue;
                        }
                        subscriber.scheduled.store(false, Ordering::SeqCst);
                        fence(Ordering::SeqCst);
                        if !subscriber.rx.is_empty() && !subscriber.scheduled.swap(true, Ordering::AcqRel) {
                            let _ = ready.send(index);
                        }
                    }
                })
            })
            .collect();
        PerSubscriberPeer {
            subscribers,
            ready,
            handles,
            countdown,
        }
    }

    fn registered(&self) -> Subscriber {
        Subscriber::owned(SendEach {
            subscribers: self.subscribers.clone(),
            ready: self.ready.clone(),
        })
    }

    fn stop(self, subscription: notify_core::Subscription) {
        let _ = subscription.unsubscribe();
        for _ in &self.handles {
            let _ = self.ready.send(Self::STOP);
        }
        for handle in self.handles {
            let _ = handle.join();
        }
    }
}

fn publish(notifier: &Notifier, name: &str, events: u64) {
    for _ in 0..events {
        notifier.instrument(name, Payload::new, |_| ());
    }
}

fn subscriptions(c: &mut Criterion) {
    let mut group = c.benchmark_group("subscriptions");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let pool = WorkerPool::new();
    for n in [1_usize, 10, 100, 1_000, 10_000, 100_000] {
        group.throughput(Throughput::Elements(n as u64 * EVENTS_PER_SUBSCRIPTION));
        {
            let notifier = Notifier::new();
            let subs = pool.subscribe_all(
                &notifier,
                (0..n).map(|_| (Pattern::exact("subs.bench"), AsyncOptions::new(), noop)),
            );
            group.bench_function(BenchmarkId::new("pool", n), |b| {
                b.iter(|| {
                    publish(&notifier, "subs.bench", EVENTS_PER_SUBSCRIPTION);
                    pool.flush();
                })
            });
            let registered: Vec<_> = subs.iter().map(|s| s.subscription().clone()).collect();
            notifier.unsubscribe_all(&registered);
        }
        {
            let notifier = Notifier::new();
            let fanout = pool.subscribe_fanout(&notifier, "subs.bench", AsyncOptions::new(), (0..n).map(|_| noop));
            group.bench_function(BenchmarkId::new("pool_fanout", n), |b| {
                b.iter(|| {
                    publish(&notifier, "subs.bench", EVENTS_PER_SUBSCRIPTION);
                    pool.flush();
                })
            });
            let _ = fanout.unsubscribe();
        }
        if n <= 10_000 {
            let notifier = Notifier::new();
            let threads = ThreadPerSubscription::start(n, EVENTS_PER_SUBSCRIPTION, noop);
            let registered = threads.subscribe(&notifier, "subs.bench");
            group.bench_function(BenchmarkId::new("threads", n), |b| {
                b.iter(|| threads.round(|| publish(&notifier, "subs.bench", EVENTS_PER_SUBSCRIPTION)))
            });
            notifier.unsubscribe_all(&registered);
            threads.stop();
        }
    }
    group.finish();
    pool.shutdown(Duration::from_secs(10));
}

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("fanout");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let pool = WorkerPool::new();
    for n in [1_usize, 10, 100, 1_000] {
        // About 100,000 deliveries per iteration whatever N.
        let events = (100_000 / n as u64).max(100);
        group.throughput(Throughput::Elements(n as u64 * events));
        {
            let notifier = Notifier::new();
            let options = AsyncOptions::new().capacity(1 << 20);
            let fanout = pool.subscribe_fanout(&notifier, "fan.bench", options, (0..n).map(|_| noop));
            group.bench_function(BenchmarkId::new("pool_fanout", n), |b| {
                b.iter(|| {
                    publish(&notifier, "fan.bench", events);
                    pool.flush();
                })
            });
            let _ = fanout.unsubscribe();
        }
        {
            let notifier = Notifier::new();
            let subs = pool.subscribe_all(
                &notifier,
                (0..n).map(|_| (Pattern::exact("fan.bench"), AsyncOptions::new().capacity(1 << 20), noop)),
            );
            group.bench_function(BenchmarkId::new("pool", n), |b| {
                b.iter(|| {
                    publish(&notifier, "fan.bench", events);
                    pool.flush();
                })
            });
            let registered: Vec<_> = subs.iter().map(|s| s.subscription().clone()).collect();
            notifier.unsubscribe_all(&registered);
        }
        {
            let notifier = Notifier::new();
            let peer = PerSubscriberPeer::start(n, pool.threads(), (events as usize).max(1024));
            let subscription = notifier.subscribe("fan.bench", peer.registered());
            let deliveries = n * events as usize;
            group.bench_function(BenchmarkId::new("peer_per_subscriber", n), |b| {
                b.iter(|| {
                    peer.countdown.expect(deliveries);
                    publish(&notifier, "fan.bench", events);
                    peer.countdown.wait();
                })
            });
            peer.stop(subscription);
        }
        {
            let notifier = Notifier::new();
            let peer = BroadcastPeer::start(n, pool.threads(), events);
            let subscription = notifier.subscribe("fan.bench", Subscriber::owned(Broadcast(peer.senders.clone())));
            group.bench_function(BenchmarkId::new("peer_broadcast", n), |b| {
                b.iter(|| {
                    peer.countdown.expect(peer.senders.len());
                    publish(&notifier, "fan.bench", events);
                    peer.countdown.wait();
                })
            });
            peer.stop(subscription);
        }
    }
    group.finish();
    pool.shutdown(Duration::from_secs(10));
}

criterion_group!(benches, subscriptions, fanout);
criterion_main!(benches);
