//! Issue 45 item 2 across NATS: the W3C `tracestate` of an event's trace crosses a real
//! nats-server (wire version 3 carries it per event) and is the imported event's
//! (`Event::trace_state`), as the exporting process had it; an event without one arrives without
//! one, and wire version 2 (which has no room for it) drops it.

mod support;

use std::time::Duration;

use notify_core::context::Propagated;
use notify_core::trace_context::{TraceFlags, TraceState};
use notify_core::{Context, Notifier, Pattern, Payload, TraceId};
use notify_nats::{Exporter, Importer, NatsOptions};
use support::{recorder, NatsServer};

const WAIT: Duration = Duration::from_secs(20);

/// Exports one traced event with `state` and one without, with `wire_version`; the
/// `tracestate` of each as imported.
fn round_trip(server: &NatsServer, wire_version: u16, state: &TraceState) -> Vec<(String, String)> {
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let local = Notifier::new();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .wire_version(wire_version)
        .start()
        .unwrap();
    let _export = local.subscribe(Pattern::all(), exporter.subscriber());
    let trace = TraceId::new(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736).unwrap();
    Propagated::for_trace(trace, TraceFlags::NONE, state.clone())
        .in_scope(|| Context::new(trace, None).in_scope(|| local.instrument("with.state", Payload::new, |_| ())));
    local.instrument("without.state", Payload::new, |_| ());
    assert_eq!(exporter.flush(WAIT).unwrap().exported, 2);
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 2).events, 2);
    let mut got: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.name().to_owned(), e.trace_state().to_string()))
        .collect();
    got.sort();
    got
}

#[test]
fn i45_2_the_tracestate_of_an_exported_event_is_the_imported_events() {
    let server = NatsServer::start();
    let state: TraceState = "rojo=00f067aa0ba902b7,congo@vendor=t61rcWkgMzE".parse().unwrap();
    assert_eq!(
        round_trip(&server, 3, &state),
        [
            (
                "with.state".to_owned(),
                "rojo=00f067aa0ba902b7,congo@vendor=t61rcWkgMzE".to_owned()
            ),
            ("without.state".to_owned(), String::new()),
        ]
    );
    // Version 2 has no field for it: the events arrive, their tracestate does not.
    assert_eq!(
        round_trip(&server, 2, &state),
        [
            ("with.state".to_owned(), String::new()),
            ("without.state".to_owned(), String::new()),
        ]
    );
}
