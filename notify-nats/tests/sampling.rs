//! Head sampling: the exporter sends only events of sampled traces.

mod support;

use std::time::Duration;

use notify_core::{event::EventId, Context, Notifier, Pattern, Payload, TraceId};
use notify_nats::{Exporter, NatsOptions};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn unsampled_traces_are_not_exported() {
    let server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let local = Notifier::new();
    let _s = local.subscribe(Pattern::glob("*.sql").unwrap(), exporter.subscriber());
    for t in 1..=20_u128 {
        // Odd trace ids arrive sampled, even ones not (the caller's W3C sampled flag).
        let caller = Context::remote(TraceId::new(t).unwrap(), EventId::new(9), t % 2 == 1);
        caller.in_scope(|| local.instrument("query.sql", Payload::new, |_| ()));
    }
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!((stats.published, stats.exported, stats.dropped.total()), (10, 10, 0));
}
