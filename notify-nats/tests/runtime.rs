//! Issue 46 item 2 for NATS: the exporter's client runs on a current-thread runtime of its own
//! (the default; also when `start` is called inside a tokio runtime) or on the application's
//! multi-thread runtime (`ExporterBuilder::runtime`); a current-thread runtime's handle, which
//! the waiting thread itself would have to drive, is a clear error.

mod support;

use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_nats::{ConnectErrorKind, Exporter, ExporterBuilder, Importer, NatsOptions};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(20);

/// Exports 10 events through `builder`'s exporter; asserts that the importer got all 10.
fn exports_through(server: &NatsServer, builder: ExporterBuilder) {
    let remote = Notifier::new();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let exporter = builder.start().unwrap();
    let local = Notifier::new();
    let _export = local.subscribe(Pattern::all(), exporter.subscriber());
    for i in 0..10_u64 {
        local.instrument("job.runtime", || Payload::new().with("i", i), |_| ());
    }
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (stats.exported, stats.dropped.total(), stats.pending),
        (10, 0, 0),
        "{stats:?}"
    );
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 10).events, 10);
    let report = exporter.shutdown(WAIT);
    assert!(report.drained, "{report:?}");
}

#[test]
fn i46_2_the_exporter_runs_on_the_applications_multi_thread_runtime() {
    let server = NatsServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    exports_through(
        &server,
        Exporter::builder(NatsOptions::new(server.url())).runtime(runtime.handle().clone()),
    );
}

#[test]
fn i46_2_started_inside_a_tokio_runtime_the_exporter_runs_on_its_own() {
    let server = NatsServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // `start` blocks this task's thread while it connects (on a thread of its own): no panic
    // for blocking inside a runtime, and the exporter does not need this runtime afterwards.
    runtime.block_on(async { exports_through(&server, Exporter::builder(NatsOptions::new(server.url()))) });
}

#[test]
fn i46_2_a_current_thread_runtime_handle_is_a_thread_error() {
    let server = NatsServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = Exporter::builder(NatsOptions::new(server.url()))
        .runtime(runtime.handle().clone())
        .start()
        .unwrap_err();
    assert_eq!(error.kind(), ConnectErrorKind::Thread);
    assert!(error.to_string().contains("multi-thread"), "{error}");
}
