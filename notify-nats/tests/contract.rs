//! The shared sink contract (`notify_export::testing::check_sink`) against the NATS sink and a
//! real nats-server: every event reaches an importer in another notifier once, whole (name, ids,
//! parent, trace, error), whatever the batch boundaries, in core mode and in JetStream mode; flush
//! and shutdown reach the sink.

mod support;

use notify_core::{Notifier, Pattern};
use notify_export::testing::{check_sink, Seen, CONTRACT_EVENTS};
use notify_nats::{Exporter, Importer, JetStream, NatsOptions};
use support::{recorder, NatsServer};

/// Runs the contract with `exporter`'s sink, reading back what `importer` republished.
fn contract(server: &NatsServer, jetstream: Option<JetStream>) {
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let mut importer = Importer::builder(NatsOptions::new(server.url()));
    let mut exporter = Exporter::builder(NatsOptions::new(server.url()));
    if let Some(js) = jetstream {
        importer = importer.jetstream(js.clone());
        exporter = exporter.jetstream(js);
    }
    let importer = importer.start(&remote).unwrap();
    let (sink, runtime) = exporter.into_sink().unwrap();
    let report = check_sink(sink, runtime, || seen.lock().unwrap().iter().map(Seen::of).collect());
    assert_eq!(report.stats.exported, CONTRACT_EVENTS as u64);
    assert_eq!(report.stats.in_flight, 0);
    importer.shutdown();
}

#[test]
fn i46_the_nats_sink_passes_the_sink_contract_in_core_mode() {
    contract(&NatsServer::start(), None);
}

#[test]
fn i46_the_nats_sink_passes_the_sink_contract_in_jetstream_mode() {
    contract(&NatsServer::start_jetstream(), Some(JetStream::new("NOTIFY_CONTRACT")));
}
