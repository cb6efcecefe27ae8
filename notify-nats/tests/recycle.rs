//! The exporter gives the events it encoded back to notify-core (`export::recycle_all`): the
//! next owned events of an instrumenting thread are written into those allocations, so a steady
//! flow allocates no owned event. (A test binary of its own: the spare list is process-wide.)

mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
use notify_nats::{Exporter, NatsOptions};
use support::NatsServer;

/// Records where each owned event lives (without keeping it).
struct Addresses(Mutex<Vec<usize>>);

impl OwnedEventSubscriber for Addresses {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.lock().unwrap().push(Arc::as_ptr(event) as usize);
    }
}

#[test]
fn the_events_the_exporter_encoded_are_reused_by_the_next_events() {
    let server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let notifier = Notifier::new();
    let addresses = Arc::new(Addresses(Mutex::new(Vec::new())));
    let _recorder = notifier.subscribe(Pattern::all(), Subscriber::owned(SharedAddresses(addresses.clone())));
    let _export = exporter.subscribe(&notifier, Pattern::all());
    let publish = |n: u64| {
        for i in 0..n {
            notifier.instrument("query.sql", || Payload::new().with("rows", i), |_| ());
        }
    };
    let take = || std::mem::take(&mut *addresses.0.lock().unwrap());

    publish(200);
    assert_eq!(exporter.flush(Duration::from_secs(20)).unwrap().exported, 200);
    // Distinct allocations (fewer than 200 when the exporter gave some back while they came):
    // after the flush every one of them waits for reuse, here or on the process-wide list.
    let first: HashSet<usize> = take().into_iter().collect();
    assert!(!first.is_empty());
    let n = first.len() as u64;
    publish(n);
    let second = take();
    assert_eq!(second.len() as u64, n);
    assert!(
        second.iter().all(|a| first.contains(a)),
        "every later event is written into an allocation the exporter gave back ({} of {n} were new)",
        second.iter().filter(|a| !first.contains(a)).count()
    );
    let stats = exporter.shutdown(Duration::from_secs(20)).stats;
    assert_eq!((stats.exported, stats.dropped.total()), (200 + n, 0));
}

struct SharedAddresses(Arc<Addresses>);

impl OwnedEventSubscriber for SharedAddresses {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.deliver(event);
    }
}
