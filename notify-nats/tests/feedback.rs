//! The exporter's own tracing output must not come back as events to export. With
//! `NotifyLayer` as the global tracing subscriber and an exporter of every event, the tracing
//! events async-nats emits on the exporter's thread while it publishes (TRACE/DEBUG, target
//! `async_nats::...`) became notify events, were exported, and made more: thousands of events a
//! second from one application event. The exporter's and importer's threads are
//! telemetry-suppressed, and `NotifyLayer` ignores what is made on them.
//!
//! Its own test binary: the tracing subscriber is the process's global default (the exporter's
//! thread does not see a thread-local default).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_nats::{Exporter, Importer, NatsOptions};
use support::NatsServer;
use tracing_subscriber::prelude::*;

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn one_application_event_is_exported_once_and_the_exporters_own_tracing_is_not() {
    let server = NatsServer::start();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(notify_tracing::NotifyLayer::new()))
        .expect("the only global tracing subscriber of this test binary");

    let remote = Notifier::new();
    let imported: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = imported.clone();
    let _record = remote.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.name().to_owned())),
    );
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let _export = Notifier::global().subscribe(Pattern::all(), exporter.subscriber());

    // The application's events: one through tracing (NotifyLayer makes it "info.app"), one
    // through notify.
    tracing::info!(target: "app", "order placed");
    notify_core::instrument("order.app", Payload::new, |_| ());

    // Let a loop, if there were one, run.
    exporter.flush(WAIT).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let settled = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (settled.published, settled.exported, settled.pending),
        (2, 2, 0),
        "only the application's events are exported: {settled:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(exporter.stats().published, 2, "{:?}", exporter.stats());

    assert_eq!(importer.wait_until(WAIT, |s| s.events >= 2).events, 2);
    let mut names = imported.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["info.app", "order.app"]);
    exporter.shutdown(WAIT);
    importer.shutdown();
}
